// FP8 E4M3 weights (block / channel / tensor scales) and the W8A8 reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "qs/error.h"
#include "qs/io/dtype.h"
#include "qs/quant/fp8.h"
#include "qs/quant/w8a8.h"

#include "java_random.h"
#include "quant_test_data.h"

namespace qs::quant {
namespace {

using testing::gaussianMatrix;
using testing::seedBytes;
using testing::seedReference;

std::uint8_t encodeOne(float v) {
    std::uint8_t code = 0;
    encodeE4m3Scaled(&v, 1, 1.0f, &code);
    return code;
}

TEST(Fp8, EncoderMatchesIoOnEveryCodeAndEveryTie) {
    for (int c = 0; c < 256; ++c) {
        if ((c & 0x7F) == 0x7F) continue;  // NaN
        const float v = io::e4m3ToF32(static_cast<std::uint8_t>(c));
        EXPECT_EQ(encodeOne(v), c) << "code " << c;  // round trip of every representable value
        if ((c & 0x7F) < 0x7E) {
            // The midpoint to the next code up is a tie: both encoders must pick the even code.
            const float next = io::e4m3ToF32(static_cast<std::uint8_t>(c + 1));
            const float mid = (v + next) / 2.0f;
            EXPECT_EQ(encodeOne(mid), io::f32ToE4m3(mid)) << "midpoint above code " << c;
            EXPECT_EQ(encodeOne(mid) & 1, 0) << "tie above code " << c << " not to even";
        }
    }
}

TEST(Fp8, EncoderSaturatesAt448) {
    EXPECT_EQ(encodeOne(448.0f), 0x7E);
    EXPECT_EQ(encodeOne(460.0f), 0x7E);  // would round to 480 with more exponent range
    EXPECT_EQ(encodeOne(1e30f), 0x7E);
    EXPECT_EQ(encodeOne(-1e30f), 0xFE);
    EXPECT_EQ(encodeOne(0x1p-10f), 0x00);   // half the smallest subnormal 2^-9: tie to even (zero)
    EXPECT_EQ(encodeOne(0x1.8p-9f), 0x02);  // 1.5 subnormal steps: tie to even (2)
    EXPECT_EQ(encodeOne(-0.0f), 0x80);
}

TEST(Fp8, EncoderMatchesIoOnRandomValues) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> exponent(-14.0f, 8.8f);
    std::uniform_int_distribution<int> sign(0, 1);
    for (int i = 0; i < 1000000; ++i) {
        const float v = std::exp2(exponent(rng)) * (sign(rng) ? -1.0f : 1.0f);
        const float clamped = std::fmin(std::fmax(v, -448.0f), 448.0f);
        ASSERT_EQ(encodeOne(clamped), io::f32ToE4m3(clamped)) << v;
    }
}

TEST(Fp8, BlockScalesAreBitExactWithTheSeed) {
    const MatrixF w = seedReference().tensor("W").toMatrix();
    const QuantizedLinear q = quantizeFp8(w, Fp8Scaling::Block);
    const MatrixF scaleInv = seedReference().tensor("fp8_block.scale_inv").toMatrix();
    ASSERT_EQ(q.scales.rows(), 1);
    ASSERT_EQ(q.scales.cols(), 4);
    for (int j = 0; j < 4; ++j) EXPECT_EQ(q.scales(0, j), scaleInv(0, j)) << "block " << j;
    const std::vector<std::uint8_t> expected = seedBytes("fp8_block.weight_e4m3_bits");
    ASSERT_EQ(q.codes.size(), expected.size());
    std::size_t differing = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) differing += q.codes[i] != expected[i];
    EXPECT_EQ(differing, 0u);
    // weight_scale_inv multiplies: the dequantized weight is within half an E4M3 step of W.
    const MatrixF back = dequantizeFp8(q);
    for (std::int64_t i = 0; i < w.size(); ++i)
        ASSERT_LE(std::fabs(back.data()[i] - w.data()[i]),
                  std::fabs(w.data()[i]) / 16.0f + q.scales.maxCoeff() / 512.0f);
}

TEST(Fp8, GranularitiesHaveTheirScaleShapes) {
    const MatrixF w = gaussianMatrix(300, 200, 3, 0.02f);
    const QuantizedLinear block = quantizeFp8(w, Fp8Scaling::Block);
    EXPECT_EQ(block.scales.rows(), 3);  // 300 rows: two full tiles and an edge tile
    EXPECT_EQ(block.scales.cols(), 2);
    EXPECT_FLOAT_EQ(block.scales(2, 1), w.block(256, 128, 44, 72).cwiseAbs().maxCoeff() / 448.0f);
    const QuantizedLinear channel = quantizeFp8(w, Fp8Scaling::PerChannel);
    EXPECT_EQ(channel.scales.rows(), 300);
    EXPECT_EQ(channel.scales.cols(), 1);
    EXPECT_EQ(channel.scales(17, 0), w.row(17).cwiseAbs().maxCoeff() / 448.0f);
    const QuantizedLinear tensor = quantizeFp8(w, Fp8Scaling::PerTensor);
    EXPECT_EQ(tensor.scales.size(), 1);
    EXPECT_EQ(tensor.scales(0, 0), w.cwiseAbs().maxCoeff() / 448.0f);
    // Each block's largest magnitude lands exactly on 448 (code 0x7E), so it survives unchanged.
    Eigen::Index r, c;
    w.cwiseAbs().maxCoeff(&r, &c);
    EXPECT_EQ(tensor.codes[static_cast<std::size_t>(r * w.cols() + c)] & 0x7F, 0x7E);
    EXPECT_FLOAT_EQ(dequantizeFp8(tensor)(r, c), w(r, c));
    // FP8's relative grid: every granularity keeps N(0, 0.02^2) weights to ~2.5% RMS error.
    for (const QuantizedLinear* q : {&block, &channel, &tensor})
        EXPECT_LT(testing::rmse(dequantizeFp8(*q), w), 0.02 * 0.03);
}

// w8a8_reference of docs/reference-algorithms.md, literally: 128-wide slices of K, each rescaled by its scales.
MatrixF seedW8a8(const MatrixF& x, const QuantizedLinear& wq) {
    const Fp8Activations a = quantizeActivationsFp8(x, 128);
    MatrixF out = MatrixF::Zero(x.rows(), wq.rows);
    for (std::int64_t kb = 0; kb < x.cols() / 128; ++kb) {
        MatrixF as(x.rows(), 128), ws(wq.rows, 128);
        for (std::int64_t t = 0; t < x.rows(); ++t)
            for (int k = 0; k < 128; ++k)
                as(t, k) =
                    io::e4m3ToF32(a.codes[static_cast<std::size_t>(t * x.cols() + kb * 128 + k)]) * a.scales(t, kb);
        for (std::int64_t o = 0; o < wq.rows; ++o)
            for (int k = 0; k < 128; ++k)
                ws(o, k) = io::e4m3ToF32(wq.codes[static_cast<std::size_t>(o * wq.cols + kb * 128 + k)]) *
                           wq.scales(o / 128, kb);
        out += as * ws.transpose();
    }
    return out;
}

TEST(W8A8, ReferenceIsTheSlicedTensorCoreSum) {
    const MatrixF w = seedReference().tensor("W").toMatrix();
    const MatrixF x = seedReference().tensor("X").toMatrix();
    const QuantizedLinear wq = quantizeFp8(w);
    const MatrixF ours = w8a8Reference(x, wq);
    const MatrixF seed = seedW8a8(x, wq);
    EXPECT_LT((ours - seed).norm() / seed.norm(), 1e-6);
}

TEST(W8A8, ActivationsAddDamageOnTopOfTheWeights) {
    const MatrixF w = seedReference().tensor("W").toMatrix();
    const MatrixF x = seedReference().tensor("X").toMatrix();
    const W8A8Error e = measureW8A8(x, w, Fp8Scaling::Block);
    // Both E4M3 roundings are ~2.5% RMS per value; over 512 products they stay at that level and
    // add in quadrature (independent errors), so W8A8 is about sqrt(2) times either alone.
    EXPECT_GT(e.weightOnlyRelative, 0.005);
    EXPECT_LT(e.weightOnlyRelative, 0.05);
    EXPECT_GT(e.activationOnlyRelative, 0.005);
    EXPECT_LT(e.activationOnlyRelative, 0.05);
    const double quadrature = std::hypot(e.weightOnlyRelative, e.activationOnlyRelative);
    EXPECT_NEAR(e.w8a8Relative, quadrature, 0.15 * quadrature);
    EXPECT_GT(e.w8a8Mse, e.weightOnlyMse);
}

// The lesson's Example 9: rows 0-1 250x larger, per-token activation scales over all 64 channels;
// mean relative row error of FP8 with per-tensor and per-channel weight scales.
double lessonRowError(Fp8Scaling scaling) {
    qs::test::JavaRandom rnd(9);
    const int out = 16, in = 64, tokens = 32;
    MatrixF w(out, in), x(tokens, in);
    for (int r = 0; r < out; ++r)
        for (int j = 0; j < in; ++j) w(r, j) = static_cast<float>(rnd.nextGaussian() * (r < 2 ? 0.5 : 0.002));
    for (int t = 0; t < tokens; ++t)
        for (int j = 0; j < in; ++j) x(t, j) = static_cast<float>(rnd.nextGaussian() * (1 + t));
    const MatrixF y = x * w.transpose();
    const MatrixF yq = w8a8Reference(x, quantizeFp8(w, scaling), in);
    double sum = 0.0;
    for (int r = 0; r < out; ++r) sum += std::sqrt((y.col(r) - yq.col(r)).squaredNorm() / y.col(r).squaredNorm());
    return sum / out;
}

TEST(W8A8, LessonScaleGranularityFigures) {
    EXPECT_NEAR(lessonRowError(Fp8Scaling::PerTensor), 0.0384, 0.0384 * 0.02);
    EXPECT_NEAR(lessonRowError(Fp8Scaling::PerChannel), 0.0386, 0.0386 * 0.02);
}

TEST(Fp8, RejectsBadBlockSize) { EXPECT_THROW(quantizeFp8(MatrixF::Ones(2, 2), Fp8Scaling::Block, 0), Error); }

}  // namespace
}  // namespace qs::quant
