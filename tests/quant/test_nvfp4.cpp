// NVFP4: 16 x E2M1 with an E4M3 block scale and an FP32 tensor scale.
#include <gtest/gtest.h>

#include <cmath>

#include "qs/error.h"
#include "qs/io/dtype.h"
#include "qs/quant/nibbles.h"
#include "qs/quant/nvfp4.h"
#include "quant_test_data.h"

namespace qs::quant {
namespace {

using testing::seedBytes;
using testing::seedReference;

TEST(Nvfp4, BitExactWithTheSeed) {
    const MatrixF w = seedReference().tensor("W").toMatrix();
    const QuantizedLinear q = quantizeNvfp4(w);
    EXPECT_EQ(q.globalScale, seedReference().tensor("nvfp4.tensor_scale").toF32().at(0));
    EXPECT_EQ(packNibbles(q.codes, NibbleOrder::EvenLow), seedBytes("nvfp4.packed"));
    std::vector<std::uint8_t> scaleBits;
    for (std::int64_t i = 0; i < q.scales.size(); ++i) scaleBits.push_back(io::f32ToE4m3(q.scales.data()[i]));
    EXPECT_EQ(scaleBits, seedBytes("nvfp4.block_scale_e4m3_bits"));
    // Every stored block scale is an E4M3 value, and the tensor scale maps amax(W) to 448 * 6.
    for (std::int64_t i = 0; i < q.scales.size(); ++i)
        ASSERT_EQ(io::e4m3ToF32(io::f32ToE4m3(q.scales.data()[i])), q.scales.data()[i]);
    EXPECT_FLOAT_EQ(q.globalScale * 448.0f * 6.0f, w.cwiseAbs().maxCoeff());
}

TEST(Nvfp4, GaussianRmseOfTheLesson) {
    // The lesson measured 0.0949 on 4096 N(0,1) values (block scale e4m3(amax / 6), no tensor
    // scale); the tensor scale moves the block scales off that grid but not the error statistics.
    const MatrixF w = testing::gaussianMatrix(1024, 1024, 42);
    const QuantizedLinear q = quantizeNvfp4(w);
    EXPECT_NEAR(testing::rmse(dequantizeNvfp4(q), w), 0.0949, 0.0949 * 0.02);
    EXPECT_DOUBLE_EQ(q.bitsPerWeight(), 4.5 + 32.0 / static_cast<double>(w.size()));
}

TEST(Nvfp4, RoundTripOfRepresentableValues) {
    // A tensor whose amax is 6 * 448 * t has tensor scale t; blocks of E2M1 values times an E4M3
    // block scale (pinned by a 6 in each block) then reproduce exactly.
    const float t = 0.001f;
    MatrixF w(4, 32);
    const float blockScales[8] = {448.0f, 1.0f, 0.5f, 3.0f, 0.125f, 240.0f, 13.0f, 0.75f};
    for (std::int64_t r = 0; r < 4; ++r)
        for (std::int64_t b = 0; b < 2; ++b) {
            const float s = blockScales[r * 2 + b];
            for (std::int64_t j = 0; j < 16; ++j)
                w(r, b * 16 + j) = io::e2m1ToF32(static_cast<std::uint8_t>((j * 7 + r) % 16)) * (s * t);
            w(r, b * 16) = 6.0f * (s * t);
        }
    const QuantizedLinear q = quantizeNvfp4(w);
    const MatrixF back = dequantizeNvfp4(q);
    EXPECT_LT((back - w).cwiseAbs().maxCoeff(), 1e-6f * w.cwiseAbs().maxCoeff());
    for (std::int64_t r = 0; r < 4; ++r)
        for (std::int64_t b = 0; b < 2; ++b) EXPECT_FLOAT_EQ(q.scales(r, b), blockScales[r * 2 + b]);
}

TEST(Nvfp4, AShortLastBlockEncodesAsTheSameBlockPaddedWithZeros) {
    // 40 columns: two full blocks and one of 8. Zeros change neither a block's amax nor the tensor's,
    // so the short block must match the first 8 values of a full block padded with zeros.
    const MatrixF w = testing::gaussianMatrix(3, 40, 7);
    MatrixF padded = MatrixF::Zero(3, 48);
    padded.leftCols(40) = w;
    const QuantizedLinear q = quantizeNvfp4(w), p = quantizeNvfp4(padded);
    ASSERT_EQ(q.scales.cols(), 3);
    EXPECT_EQ(q.scales, p.scales);
    for (std::int64_t r = 0; r < 3; ++r)
        for (std::int64_t c = 0; c < 40; ++c)
            EXPECT_EQ(q.codes[static_cast<std::size_t>(r * 40 + c)], p.codes[static_cast<std::size_t>(r * 48 + c)]);
    EXPECT_EQ(dequantizeNvfp4(q), MatrixF(dequantizeNvfp4(p).leftCols(40)));
}

TEST(Nvfp4, AllZeroWeightDecodesToZero) {
    const QuantizedLinear q = quantizeNvfp4(MatrixF::Zero(3, 48));
    EXPECT_EQ(dequantizeNvfp4(q), MatrixF::Zero(3, 48));
    for (std::uint8_t c : q.codes) EXPECT_EQ(c, 0);
}

}  // namespace
}  // namespace qs::quant
