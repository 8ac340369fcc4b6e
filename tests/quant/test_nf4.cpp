// bitsandbytes NF4 with double quantization of the absmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "qs/error.h"
#include "qs/quant/nf4.h"
#include "qs/quant/nibbles.h"

#include "quant_test_data.h"

namespace qs::quant {
namespace {

// The standard normal quantile by bisection on erfc (double precision).
double normalPpf(double p) {
    double lo = -10.0, hi = 10.0;
    for (int i = 0; i < 200; ++i) {
        const double mid = (lo + hi) / 2;
        (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
    }
    return (lo + hi) / 2;
}

TEST(Nf4, TableIsBitsandbytesConstants) {
    const double bnb[16] = {-1.0,
                            -0.6961928009986877,
                            -0.5250730514526367,
                            -0.39491748809814453,
                            -0.28444138169288635,
                            -0.18477343022823334,
                            -0.09105003625154495,
                            0.0,
                            0.07958029955625534,
                            0.16093020141124725,
                            0.24611230194568634,
                            0.33791524171829224,
                            0.44070982933044434,
                            0.5626170039176941,
                            0.7229568362236023,
                            1.0};
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(nf4Table()[static_cast<std::size_t>(i)], bnb[i], 1e-7) << i;
}

TEST(Nf4, TableIsTheNormalQuantileConstruction) {
    // create_normal_map(0.9677083): ppf at 8 (positive) and 7 (negative) evenly spaced
    // probabilities from 0.9677083 towards 0.5, plus 0, divided by the largest. bitsandbytes
    // computes the probabilities with an f32 linspace, hence the 1e-6 tolerance.
    const double offset = 0.9677083;
    std::vector<double> v = {0.0};
    for (int i = 0; i < 8; ++i) v.push_back(normalPpf(offset + (0.5 - offset) * i / 8.0));
    for (int i = 0; i < 7; ++i) v.push_back(-normalPpf(offset + (0.5 - offset) * i / 7.0));
    std::sort(v.begin(), v.end());
    for (std::size_t i = 0; i < 16; ++i) EXPECT_NEAR(nf4Table()[i], v[i] / v[15], 2e-6) << i;
}

TEST(Nf4, NearestLevelWithTiesToTheLowerOne) {
    const auto& t = nf4Table();
    for (int i = 0; i < 16; ++i) EXPECT_EQ(nearestNf4(t[static_cast<std::size_t>(i)]), i);
    EXPECT_EQ(nearestNf4(t[8] / 2.0f), 7);  // exactly halfway between 0 and 0.0796: the lower (argmin's first)
    EXPECT_EQ(nearestNf4(t[6] / 2.0f), 6);  // halfway between -0.0911 and 0
    EXPECT_EQ(nearestNf4(0.9f), 15);
    EXPECT_EQ(nearestNf4(-0.2f), 5);
}

TEST(Nf4, NearestIsBitsandbytesArgminOnEveryFloatNearADecision) {
    // torch.argmin(|v - table|): the first nearest level. Checked on the 2001 floats around each
    // midpoint (where rounding decides) and on a million uniform values.
    const auto& t = nf4Table();
    const auto argmin = [&](float v) {
        int best = 0;
        for (int i = 1; i < 16; ++i)
            if (std::fabs(v - t[static_cast<std::size_t>(i)]) < std::fabs(v - t[static_cast<std::size_t>(best)]))
                best = i;
        return best;
    };
    for (int j = 0; j < 15; ++j) {
        float v = (t[static_cast<std::size_t>(j)] + t[static_cast<std::size_t>(j) + 1]) / 2.0f;
        for (int k = 0; k < 1000; ++k) v = std::nextafter(v, -2.0f);
        for (int k = 0; k < 2001; ++k, v = std::nextafter(v, 2.0f)) ASSERT_EQ(nearestNf4(v), argmin(v)) << v;
    }
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int i = 0; i < 1000000; ++i) {
        const float v = u(rng);
        ASSERT_EQ(nearestNf4(v), argmin(v)) << v;
    }
}

TEST(Nf4, EncoderCodesAreNearestOfValueTimesInverseAbsmax) {
    // The encoder's vector search against nearestNf4 element by element: blocks whose absmax is 1
    // (so x * inverse is x) filled with the 61 floats around each decision between adjacent levels,
    // and Gaussian blocks with an arbitrary absmax.
    const auto& t = nf4Table();
    std::vector<float> near;
    for (std::size_t j = 0; j + 1 < 16; ++j) {
        float v = (t[j] + t[j + 1]) / 2.0f;
        for (int k = 0; k < 30; ++k) v = std::nextafter(v, -2.0f);
        for (int k = 0; k < 61; ++k, v = std::nextafter(v, 2.0f)) near.push_back(v);
    }
    for (float level : t) near.push_back(level);
    const std::int64_t exactRows = static_cast<std::int64_t>((near.size() + 62) / 63);
    MatrixF w = testing::gaussianMatrix(exactRows + 8, 128, 5, 0.3f);
    for (std::int64_t r = 0; r < exactRows; ++r) {
        w(r, 0) = r % 2 ? -1.0f : 1.0f;
        for (std::int64_t c = 1; c < 64; ++c) {
            const std::size_t i = static_cast<std::size_t>(r * 63 + c - 1);
            w(r, c) = i < near.size() ? near[i] : 0.0f;
        }
    }
    const QuantizedLinear q = quantizeNf4(w);
    for (std::int64_t r = 0; r < w.rows(); ++r)
        for (std::int64_t b = 0; b < 2; ++b) {
            const float amax = w.row(r).segment(b * 64, 64).cwiseAbs().maxCoeff();
            const float inverse = 1.0f / amax;
            for (std::int64_t c = b * 64; c < b * 64 + 64; ++c)
                ASSERT_EQ(q.codes[static_cast<std::size_t>(r * 128 + c)], nearestNf4(w(r, c) * inverse))
                    << r << "," << c << " " << w(r, c);
        }
}

TEST(Nf4, NearestDynamicLevelIsArgminOnEveryFloatNearADecision) {
    // The double quantization of absmax rounds to the nearest of 256 dynamic-map levels (first on ties).
    const auto& m = dynamicMap8();
    const auto argmin = [&](float v) {
        int best = 0;
        for (int i = 1; i < 256; ++i)
            if (std::fabs(v - m[static_cast<std::size_t>(i)]) < std::fabs(v - m[static_cast<std::size_t>(best)]))
                best = i;
        return best;
    };
    for (int j = 0; j < 255; ++j) {
        float v = (m[static_cast<std::size_t>(j)] + m[static_cast<std::size_t>(j) + 1]) / 2.0f;
        for (int k = 0; k < 20; ++k) v = std::nextafter(v, -2.0f);
        for (int k = 0; k < 41; ++k, v = std::nextafter(v, 2.0f)) ASSERT_EQ(nearestDynamic8(v), argmin(v)) << v;
    }
    for (float v : m) ASSERT_EQ(m[nearestDynamic8(v)], v);
    std::mt19937 rng(4);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int i = 0; i < 100000; ++i) {
        const float v = u(rng);
        ASSERT_EQ(nearestDynamic8(v), argmin(v)) << v;
    }
}

TEST(Nf4, DynamicMapIsCreateDynamicMapSigned) {
    const auto& m = dynamicMap8();
    EXPECT_TRUE(std::is_sorted(m.begin(), m.end()));
    EXPECT_EQ(m[127], 0.0f);
    EXPECT_EQ(m[255], 1.0f);
    EXPECT_FLOAT_EQ(m[128], 0.55e-6f);  // decade 1e-6: the midpoint of [0.1, 1]
    EXPECT_FLOAT_EQ(m[126], -0.55e-6f);
    EXPECT_FLOAT_EQ(m[254], 0.99296875f);  // decade 1: last midpoint of 65 points on [0.1, 1]
    EXPECT_FLOAT_EQ(m[0], -0.99296875f);
    EXPECT_EQ(std::adjacent_find(m.begin(), m.end()), m.end());  // 256 distinct levels
}

TEST(Nf4, GaussianRmseOfTheLessonAgainstInt4) {
    // The lesson: blocks of 64, absmax scale: NF4 RMSE 0.0927, INT4 0.1070, where INT4 is
    // symmetric round-to-nearest with scale absmax / 7 and codes clamped to [-8, 7].
    const MatrixF w = testing::gaussianMatrix(1024, 1024, 42);
    const QuantizedLinear plain = quantizeNf4(w, {.blockSize = 64, .doubleQuant = false});
    EXPECT_NEAR(testing::rmse(dequantizeNf4(plain), w), 0.0927, 0.0927 * 0.02);
    MatrixF int4(w.rows(), w.cols());
    for (std::int64_t b = 0; b < w.size() / 64; ++b) {
        const float* x = w.data() + b * 64;
        float amax = 0.0f;
        for (int i = 0; i < 64; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float s = amax / 7.0f;
        for (int i = 0; i < 64; ++i) int4.data()[b * 64 + i] = s * std::clamp(std::nearbyint(x[i] / s), -8.0f, 7.0f);
    }
    EXPECT_NEAR(testing::rmse(int4, w), 0.1070, 0.1070 * 0.02);
    // Double quantization costs almost nothing in error and takes the scales from 0.5 to 0.127 bpw.
    const QuantizedLinear dq = quantizeNf4(w);
    EXPECT_LT(testing::rmse(dequantizeNf4(dq), w), testing::rmse(dequantizeNf4(plain), w) * 1.005);
    EXPECT_NEAR(dq.bitsPerWeight(), 4.0 + 8.0 / 64 + 32.0 / (64 * 256), 1e-9);
    EXPECT_NEAR(plain.bitsPerWeight(), 4.5, 1e-9);
}

TEST(Nf4, DoubleQuantizationStoresWhatTheScalesDecodeFrom) {
    const MatrixF w = testing::gaussianMatrix(64, 512, 9, 0.02f);  // 512 blocks: two nested blocks of 256
    const QuantizedLinear q = quantizeNf4(w);
    ASSERT_EQ(q.scaleCodes.size(), 512u);
    ASSERT_EQ(q.scaleScales.size(), 2u);
    double mean = 0.0, maxAbsmaxError = 0.0;
    for (std::int64_t b = 0; b < 512; ++b) mean += w.block(b / 8, (b % 8) * 64, 1, 64).cwiseAbs().maxCoeff();
    mean /= 512;
    EXPECT_NEAR(q.scaleOffset, mean, 1e-7);
    for (std::int64_t b = 0; b < 512; ++b) {
        const float decoded = dynamicMap8()[q.scaleCodes[static_cast<std::size_t>(b)]] *
                                  q.scaleScales[static_cast<std::size_t>(b / 256)] +
                              q.scaleOffset;
        EXPECT_EQ(q.scales(b / 8, b % 8), decoded);
        const double absmax = w.block(b / 8, (b % 8) * 64, 1, 64).cwiseAbs().maxCoeff();
        maxAbsmaxError = std::max(maxAbsmaxError, std::fabs(decoded - absmax) / absmax);
    }
    // 8-bit dynamic codes of (absmax - mean) / max|absmax - mean|: within ~1% of the absmax.
    EXPECT_LT(maxAbsmaxError, 0.01);
    // bitsandbytes packs the first element of a pair in the HIGH nibble.
    const auto packed = packNibbles(q.codes, NibbleOrder::EvenHigh);
    EXPECT_EQ(packed[0], (q.codes[0] << 4) | q.codes[1]);
}

TEST(Nf4, RejectsShapesBitsandbytesCannotMap) {
    EXPECT_THROW(quantizeNf4(MatrixF::Ones(4, 100)), Error);
    EXPECT_THROW(quantizeNf4(MatrixF::Ones(4, 128), {.blockSize = 48}), Error);
    const QuantizedLinear zero = quantizeNf4(MatrixF::Zero(2, 64), {.blockSize = 64, .doubleQuant = false});
    EXPECT_EQ(dequantizeNf4(zero), MatrixF::Zero(2, 64));
}

}  // namespace
}  // namespace qs::quant
