// Activation and KV-cache fake quantization (activation_quant.h) against brute-force references
// written here: E4M3 and E2M1 rounding by search over every representable value (nearest, ties to the
// even code), the scales by their published formulas, saturation beyond the calibrated range.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "qs/error.h"
#include "qs/io/dtype.h"
#include "qs/quant/activation_quant.h"

namespace qs::quant {
namespace {

// The nearest of `values` (sorted ascending, non-negative) to |v|, clamped to the largest; ties go to the even index.
float nearestOf(const std::vector<float>& values, float v) {
    const float a = std::min(std::fabs(v), values.back());
    std::size_t best = 0;
    for (std::size_t i = 1; i < values.size(); ++i) {
        const float d = std::fabs(values[i] - a), bestD = std::fabs(values[best] - a);
        if (d < bestD || (d == bestD && i % 2 == 0)) best = i;
    }
    return std::copysign(values[best], v);
}

const std::vector<float>& e4m3Values() {
    static const std::vector<float> values = [] {
        std::vector<float> v;
        for (int code = 0; code < 0x7F; ++code) v.push_back(io::e4m3ToF32(static_cast<std::uint8_t>(code)));
        return v;  // ascending: the positive finite codes in order
    }();
    return values;
}

const std::vector<float> kE2m1{0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

MatrixF randomActivations(int rows, int cols, unsigned seed) {
    std::mt19937 rng(seed);
    std::student_t_distribution<float> heavy(3.0f);  // activations have heavy tails
    MatrixF x(rows, cols);
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = heavy(rng);
    x(rows / 2, cols / 3) = 40.0f;  // one outlier channel value
    return x;
}

float fp8Reference(float x, float scale) { return nearestOf(e4m3Values(), x / scale) * scale; }

TEST(ActivationQuant, StaticFp8IsE4m3OfXOverTheScale) {
    MatrixF x = randomActivations(37, 96, 1);
    const float scale = activationScaleFor(ActivationFormat::Fp8Tensor, 20.0f);  // the outlier (40) saturates
    EXPECT_EQ(scale, 20.0f / 448.0f);
    const MatrixF original = x;
    fakeQuantize(x, {ActivationFormat::Fp8Tensor, scale});
    for (Eigen::Index i = 0; i < x.size(); ++i)
        ASSERT_EQ(x.data()[i], fp8Reference(original.data()[i], scale)) << original.data()[i];
    EXPECT_EQ(x(37 / 2, 96 / 3), 448.0f * scale);  // saturated, not wrapped
}

TEST(ActivationQuant, PerTokenFp8ScalesEachRowByItsOwnMaximum) {
    MatrixF x = randomActivations(19, 64, 2);
    const MatrixF original = x;
    fakeQuantize(x, {ActivationFormat::Fp8Token, 0.0f});
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        const float scale = original.row(r).cwiseAbs().maxCoeff() / 448.0f;
        for (Eigen::Index c = 0; c < x.cols(); ++c)
            ASSERT_EQ(x(r, c), fp8Reference(original(r, c), scale)) << r << "," << c;
    }
}

TEST(ActivationQuant, Nvfp4BlocksOf16UnderTheCalibratedGlobalScale) {
    MatrixF x = randomActivations(11, 80, 3);
    const float global = activationScaleFor(ActivationFormat::Nvfp4, 12.0f);  // the outlier block saturates
    EXPECT_EQ(global, 12.0f / (448.0f * 6.0f));
    const MatrixF original = x;
    fakeQuantize(x, {ActivationFormat::Nvfp4, global});
    for (Eigen::Index r = 0; r < x.rows(); ++r)
        for (Eigen::Index b = 0; b < x.cols(); b += 16) {
            const float amax = original.row(r).segment(b, 16).cwiseAbs().maxCoeff();
            const float blockScale = nearestOf(e4m3Values(), std::min(amax / 6.0f / global, 448.0f));
            const float step = blockScale * global;
            for (Eigen::Index c = b; c < b + 16; ++c) {
                const float expected = step > 0.0f ? nearestOf(kE2m1, original(r, c) / step) * step : 0.0f;
                ASSERT_FLOAT_EQ(x(r, c), expected) << r << "," << c;
            }
        }
    EXPECT_FLOAT_EQ(x(11 / 2, 80 / 3), 6.0f * 448.0f * global);  // the block scale stopped at 448
}

TEST(ActivationQuant, KvCacheFp8AndNoneLeaveWhatTheyShould) {
    MatrixF x = randomActivations(8, 32, 4);
    const MatrixF original = x;
    fakeQuantize(x, {});
    EXPECT_EQ(x, original);
    fakeQuantizeFp8(x, 0.01f);
    for (Eigen::Index i = 0; i < x.size(); ++i) ASSERT_EQ(x.data()[i], fp8Reference(original.data()[i], 0.01f));
    EXPECT_THROW(fakeQuantizeFp8(x, 0.0f), Error);
    EXPECT_THROW(fakeQuantize(x, {ActivationFormat::Nvfp4, 0.0f}), Error);
}

TEST(ActivationQuant, FusedInputsTakeTheLargestScaleOfOneFormat) {
    const std::vector<ActivationQuant> qkv{
        {ActivationFormat::Fp8Tensor, 0.5f}, {ActivationFormat::Fp8Tensor, 2.0f}, {ActivationFormat::Fp8Tensor, 1.0f}};
    EXPECT_EQ(fusedInput(qkv), (ActivationQuant{ActivationFormat::Fp8Tensor, 2.0f}));
    EXPECT_FALSE(fusedInput(std::vector<ActivationQuant>{{}, {}}).active());
    const std::vector<ActivationQuant> mixed{{ActivationFormat::Fp8Tensor, 0.5f}, {}};
    EXPECT_THROW(fusedInput(mixed), Error);
}

}  // namespace
}  // namespace qs::quant
