// MXFP4 (32 x E2M1, E8M0 scale), E2M1 itself and the nibble orders.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "qs/error.h"
#include "qs/io/dtype.h"
#include "qs/quant/mxfp4.h"
#include "qs/quant/nibbles.h"

#include "java_random.h"
#include "quant_test_data.h"

namespace qs::quant {
namespace {

using testing::seedBytes;
using testing::seedReference;

// A 1 x 32 block whose amax is 7.5 has exponent floor(log2 7.5) - 2 = 0: scale 1, so the codes are
// E2M1 of the values themselves.
std::vector<std::uint8_t> e2m1Codes(const std::vector<float>& values) {
    std::vector<std::uint8_t> codes;
    for (std::size_t i = 0; i < values.size(); i += 31) {
        MatrixF row = MatrixF::Zero(1, 32);
        row(0, 0) = 7.5f;
        for (std::size_t j = 0; j < 31 && i + j < values.size(); ++j)
            row(0, static_cast<Eigen::Index>(j + 1)) = values[i + j];
        const QuantizedLinear q = quantizeMxfp4(row);
        EXPECT_EQ(q.scales(0, 0), 1.0f);
        for (std::size_t j = 0; j < 31 && i + j < values.size(); ++j) codes.push_back(q.codes[j + 1]);
    }
    return codes;
}

TEST(E2m1, ValueTable) {
    const float expected[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (int c = 0; c < 16; ++c) {
        const float v = io::e2m1ToF32(static_cast<std::uint8_t>(c));
        EXPECT_EQ(std::fabs(v), expected[c & 7]);
        EXPECT_EQ(std::signbit(v), c >= 8);
    }
    // Round trip: every representable value encodes to its own code (+-0 included).
    std::vector<float> values;
    for (int c = 0; c < 16; ++c) values.push_back(io::e2m1ToF32(static_cast<std::uint8_t>(c)));
    const std::vector<std::uint8_t> codes = e2m1Codes(values);
    for (int c = 0; c < 16; ++c) EXPECT_EQ(codes[static_cast<std::size_t>(c)], c);
}

TEST(E2m1, TiesGoToEvenAndLargeValuesSaturate) {
    const std::vector<float> ties = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 7.0f, -0.25f, -5.0f, -0.1f};
    const std::vector<std::uint8_t> expected = {0, 2, 2, 4, 4, 6, 6, 7, 8, 14, 8};
    EXPECT_EQ(e2m1Codes(ties), expected);
    // and agrees with qs::io's scalar conversion on 100k values (ties by construction above)
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-7.5f, 7.5f);
    std::vector<float> values(100000);
    for (float& v : values) v = u(rng);
    const std::vector<std::uint8_t> codes = e2m1Codes(values);
    for (std::size_t i = 0; i < values.size(); ++i)
        ASSERT_EQ(io::e2m1ToF32(codes[i]), io::e2m1ToF32(io::f32ToE2m1(values[i]))) << values[i];
}

TEST(Nibbles, BothOrdersRoundTrip) {
    const std::vector<std::uint8_t> codes = {1, 2, 3, 4, 5};
    EXPECT_EQ(packNibbles(codes, NibbleOrder::EvenLow), (std::vector<std::uint8_t>{0x21, 0x43, 0x05}));
    EXPECT_EQ(packNibbles(codes, NibbleOrder::EvenHigh), (std::vector<std::uint8_t>{0x12, 0x34, 0x50}));
    for (NibbleOrder order : {NibbleOrder::EvenLow, NibbleOrder::EvenHigh})
        EXPECT_EQ(unpackNibbles(packNibbles(codes, order), codes.size(), order), codes);
    EXPECT_THROW(unpackNibbles(std::vector<std::uint8_t>{1}, 3, NibbleOrder::EvenLow), Error);
}

TEST(Mxfp4, BitExactWithTheSeed) {
    const MatrixF w = seedReference().tensor("W").toMatrix();
    const QuantizedLinear q = quantizeMxfp4(w);
    EXPECT_EQ(packNibbles(q.codes, NibbleOrder::EvenLow), seedBytes("mxfp4.blocks"));
    EXPECT_EQ(mxfp4ScaleBytes(q), seedBytes("mxfp4.scales"));
    // E2M1 * 2^e: the largest magnitude of each block is within E2M1's top binade [4, 6].
    const MatrixF back = dequantizeMxfp4(q);
    for (std::int64_t r = 0; r < w.rows(); ++r)
        for (std::int64_t b = 0; b < 16; ++b) {
            const float amax = w.block(r, b * 32, 1, 32).cwiseAbs().maxCoeff();
            EXPECT_GE(amax / q.scales(r, b), 4.0f);
            EXPECT_LT(amax / q.scales(r, b), 8.0f);
            EXPECT_LE((back.block(r, b * 32, 1, 32) - w.block(r, b * 32, 1, 32)).cwiseAbs().maxCoeff(),
                      2.0f * q.scales(r, b));  // saturation at 6 of up to 8
        }
}

TEST(Mxfp4, RoundTripOfRepresentableValues) {
    // Codes times powers of two decode and re-encode to themselves, the block exponent included.
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> code(0, 15), exponent(-20, 10);
    MatrixF w(8, 64);
    for (std::int64_t r = 0; r < 8; ++r)
        for (std::int64_t b = 0; b < 2; ++b) {
            const float scale = std::ldexp(1.0f, exponent(rng));
            for (std::int64_t j = 0; j < 32; ++j)
                w(r, b * 32 + j) = io::e2m1ToF32(static_cast<std::uint8_t>(code(rng))) * scale;
            w(r, b * 32) = 6.0f * scale;  // pins the block's exponent
        }
    const MatrixF back = dequantizeMxfp4(quantizeMxfp4(w));
    EXPECT_EQ((back - w).cwiseAbs().maxCoeff(), 0.0f);
}

TEST(Mxfp4, GaussianRmseOfTheLesson) {
    // 1M N(0,1) values: the lesson measured 0.1145 (4096 values, ggml's scale rule).
    const MatrixF w = testing::gaussianMatrix(1024, 1024, 42);
    EXPECT_NEAR(testing::rmse(dequantizeMxfp4(quantizeMxfp4(w)), w), 0.1145, 0.1145 * 0.02);
    // and on the lesson's own 4096 samples (java.util.Random(42)) to the printed four decimals
    qs::test::JavaRandom rnd(42);
    MatrixF x(1, 4096);
    for (std::int64_t i = 0; i < 4096; ++i) x(0, i) = static_cast<float>(rnd.nextGaussian());
    EXPECT_NEAR(testing::rmse(dequantizeMxfp4(quantizeMxfp4(x)), x), 0.1145, 0.00006);
}

TEST(Mxfp4, ZeroBlocksAndShortRows) {
    MatrixF w = MatrixF::Zero(2, 40);  // 40 = one block of 32 and one of 8
    w(1, 35) = 3.0f;
    const QuantizedLinear q = quantizeMxfp4(w);
    EXPECT_EQ(q.scales.cols(), 2);
    EXPECT_EQ(mxfp4ScaleBytes(q)[0], 0);  // amax 0 -> 2^-126 floor -> exponent clamped to -127
    EXPECT_EQ(q.scales(1, 1), 0.5f);      // floor(log2 3) - 2 = -1
    EXPECT_EQ(dequantizeMxfp4(q), w);
}

}  // namespace
}  // namespace qs::quant
