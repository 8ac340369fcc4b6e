// QuantizedLinear's named constructors: each sets the whole header of its kind, and allocateParts()
// sizes parts that the decoder accepts. Checked against the layouts the format comments state and
// against hand-decoded values.
#include <gtest/gtest.h>

#include <algorithm>

#include "qs/error.h"
#include "qs/io/dtype.h"
#include "qs/quant/nf4.h"
#include "qs/quant/quantized_linear.h"

using namespace qs;
using namespace qs::quant;

TEST(QuantizedLinear, IntGridHeaderAndPartsWithAPartialLastGroup) {
    QuantizedLinear q = QuantizedLinear::intGrid(Method::Gptq, 3, 70, 4, 32, false);
    EXPECT_EQ(q.method, Method::Gptq);
    EXPECT_EQ(q.codeKind, CodeKind::UnsignedInt);
    EXPECT_EQ(q.bits, 4);
    EXPECT_EQ(q.groupSize, 32);
    EXPECT_FALSE(q.symmetric);
    EXPECT_EQ(q.blockRows, 1);
    EXPECT_EQ(q.blockCols, 32);
    q.allocateParts();
    EXPECT_EQ(q.codes.size(), 210u);
    EXPECT_EQ(q.scales.rows(), 3);
    EXPECT_EQ(q.scales.cols(), 3);  // 32 + 32 + 6 columns
    EXPECT_EQ(q.zeros.rows(), 3);
    EXPECT_EQ(q.zeros.cols(), 3);
    // value = (code - zero) * scale of the element's group: column 69 is in the third group.
    q.scales.setConstant(0.5f);
    q.zeros.setConstant(8.0f);
    q.scales(2, 2) = 0.25f;
    q.codes[2 * 70 + 69] = 11;
    const MatrixF w = q.dequantize();
    EXPECT_EQ(w(2, 69), (11.0f - 8.0f) * 0.25f);
    EXPECT_EQ(w(0, 0), -4.0f);
    // 4-bit codes, a 16-bit scale and a 4-bit zero per group
    EXPECT_NEAR(q.bitsPerWeight(), 4.0 + 9.0 * 20.0 / 210.0, 1e-12);
}

TEST(QuantizedLinear, IntGridPerRowIsOneGroupOfAllColumns) {
    QuantizedLinear q = QuantizedLinear::intGrid(Method::Rtn, 5, 48, 8, -1, true);
    EXPECT_EQ(q.groupSize, -1);
    EXPECT_EQ(q.blockCols, 48);
    q.allocateParts();
    EXPECT_EQ(q.scales.cols(), 1);
    EXPECT_DOUBLE_EQ(q.bitsPerWeight(), 8.0 + 16.0 / 48.0);  // symmetric: no zero stored
}

TEST(QuantizedLinear, IntBlocksCoverTwoDimensionalBlocks) {
    QuantizedLinear q = QuantizedLinear::intBlocks(Method::Rtn, 200, 130, 8, true, -1, 128, 128);
    q.allocateParts();
    EXPECT_EQ(q.scales.rows(), 2);
    EXPECT_EQ(q.scales.cols(), 2);
    q.scales << 1.0f, 2.0f, 3.0f, 4.0f;
    q.zeros.setConstant(128.0f);
    std::fill(q.codes.begin(), q.codes.end(), std::uint8_t{129});
    const MatrixF w = q.dequantize();
    EXPECT_EQ(w(0, 0), 1.0f);
    EXPECT_EQ(w(127, 129), 2.0f);
    EXPECT_EQ(w(128, 0), 3.0f);
    EXPECT_EQ(w(199, 129), 4.0f);
}

TEST(QuantizedLinear, Fp8BlocksAndChannels) {
    QuantizedLinear blocks = QuantizedLinear::fp8(300, 256, 128, 128, 128);
    EXPECT_EQ(blocks.method, Method::Fp8);
    EXPECT_EQ(blocks.codeKind, CodeKind::E4M3);
    EXPECT_EQ(blocks.bits, 8);
    EXPECT_TRUE(blocks.symmetric);
    blocks.allocateParts();
    EXPECT_EQ(blocks.scales.rows(), 3);
    EXPECT_EQ(blocks.scales.cols(), 2);
    EXPECT_EQ(blocks.zeros.size(), 0);  // no zero points outside the integer grids
    QuantizedLinear channel = QuantizedLinear::fp8(4, 10, 1, 10, -1);
    channel.allocateParts();
    channel.scales << 1.0f, 2.0f, 4.0f, 8.0f;
    std::fill(channel.codes.begin(), channel.codes.end(), std::uint8_t{0x38});  // e4m3 1.0
    EXPECT_EQ(io::e4m3ToF32(0x38), 1.0f);
    EXPECT_EQ(channel.dequantize()(3, 9), 8.0f);
    EXPECT_DOUBLE_EQ(channel.bitsPerWeight(), 8.0 + 32.0 * 4 / 40.0);
}

TEST(QuantizedLinear, Fp4AndNf4AreBlocksOfOneRow) {
    QuantizedLinear nv = QuantizedLinear::fp4(Method::Nvfp4, 2, 48, 16);
    EXPECT_EQ(nv.codeKind, CodeKind::E2M1);
    EXPECT_EQ(nv.groupSize, 16);
    EXPECT_EQ(nv.blockRows, 1);
    EXPECT_EQ(nv.blockCols, 16);
    nv.allocateParts();
    EXPECT_EQ(nv.scales.cols(), 3);
    nv.scales.setConstant(2.0f);
    nv.globalScale = 0.5f;
    nv.codes[47] = 0x7;  // e2m1 6.0
    EXPECT_EQ(nv.dequantize()(0, 47), 6.0f * 2.0f * 0.5f);
    EXPECT_DOUBLE_EQ(nv.bitsPerWeight(), 4.0 + 8.0 * 6 / 96.0 + 32.0 / 96.0);

    QuantizedLinear nf = QuantizedLinear::nf4(2, 128, 64);
    EXPECT_EQ(nf.method, Method::Nf4);
    EXPECT_EQ(nf.codeKind, CodeKind::Nf4);
    nf.allocateParts();
    nf.scales.setConstant(3.0f);
    nf.codes[1] = 15;
    EXPECT_EQ(nf.dequantize()(0, 1), nf4Table()[15] * 3.0f);
}

TEST(QuantizedLinear, TrellisCodesCarryTheirTrellisParts) {
    QuantizedLinear q = QuantizedLinear::trellisCodes(4, 512, 8, 3, 256, 99);
    EXPECT_EQ(q.method, Method::Trellis);
    EXPECT_EQ(q.codeKind, CodeKind::Trellis);
    EXPECT_EQ(q.bits, 3);
    EXPECT_EQ(q.trellis.L, 8);
    EXPECT_EQ(q.trellis.K, 3);
    EXPECT_EQ(q.trellis.groupSize, 256);
    EXPECT_EQ(q.trellis.rotationSeed, 99u);
    q.allocateParts();
    EXPECT_EQ(q.scales.rows(), 4);
    EXPECT_EQ(q.scales.cols(), 2);
    EXPECT_EQ(q.trellis.starts.size(), 8u);
    EXPECT_DOUBLE_EQ(q.bitsPerWeight(), (8.0 + 3.0 * 255 + 16.0) / 256);
}

TEST(QuantizedLinear, AllocatePartsRefusesAHeaderWithoutBlocks) {
    QuantizedLinear q;  // no named constructor: blockCols 0
    EXPECT_THROW(q.allocateParts(), Error);
}
