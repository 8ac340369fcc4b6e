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

TEST(Nvfp4, EveryCodeIsTheReferenceRoundingOfValueOverScale) {
    // The encoder's vector path against qs::io's scalar E2M1 rounding of x / (block scale * tensor
    // scale), element by element: first on Gaussian weights, then with most of every block moved onto
    // (or next to) the rounding midpoints of its own scale, where ties-to-even decides. The block and
    // tensor amax stay, so the scales do too. 40 columns: two full blocks and a short one.
    MatrixF w = testing::gaussianMatrix(24, 40, 11);
    const auto check = [](const MatrixF& m, const QuantizedLinear& q) {
        for (std::int64_t r = 0; r < m.rows(); ++r)
            for (std::int64_t c = 0; c < m.cols(); ++c) {
                const float s = q.scales(r, c / 16) * q.globalScale;
                ASSERT_EQ(q.codes[static_cast<std::size_t>(r * m.cols() + c)], io::f32ToE2m1(m(r, c) / s))
                    << r << "," << c << " " << m(r, c);
            }
    };
    const QuantizedLinear q = quantizeNvfp4(w);
    check(w, q);
    const float ties[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
    for (std::int64_t r = 0; r < w.rows(); ++r)
        for (std::int64_t b = 0; b < 3; ++b) {
            const std::int64_t c0 = b * 16, n = std::min<std::int64_t>(16, 40 - c0);
            std::int64_t keep = c0;  // the block's amax stays in place
            for (std::int64_t c = c0; c < c0 + n; ++c)
                if (std::fabs(w(r, c)) > std::fabs(w(r, keep))) keep = c;
            const float s = q.scales(r, b) * q.globalScale;
            for (std::int64_t c = c0, k = 0; c < c0 + n; ++c, ++k) {
                if (c == keep) continue;
                float v = ties[k % 7] * s * ((k / 7) % 2 ? -1.0f : 1.0f);
                if (k % 3 == 1) v = std::nextafter(v, 0.0f);
                if (k % 3 == 2) v = std::nextafter(v, 2.0f * v);
                w(r, c) = v;
            }
        }
    const QuantizedLinear t = quantizeNvfp4(w);
    ASSERT_EQ(t.scales, q.scales);
    ASSERT_EQ(t.globalScale, q.globalScale);
    check(w, t);
}

TEST(Nvfp4, AllZeroWeightDecodesToZero) {
    const QuantizedLinear q = quantizeNvfp4(MatrixF::Zero(3, 48));
    EXPECT_EQ(dequantizeNvfp4(q), MatrixF::Zero(3, 48));
    for (std::uint8_t c : q.codes) EXPECT_EQ(c, 0);
}

}  // namespace
}  // namespace qs::quant
