// The format encoders and decoders on the device against the CPU backend: bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "qs/error.h"
#include "qs/quant/fp8.h"
#include "qs/quant/nf4.h"

#include "gpu_test_support.h"

namespace qs::gpu::test {
namespace {

void expectSameParts(const quant::QuantizedLinear& gpu, const quant::QuantizedLinear& cpu) {
    EXPECT_EQ(gpu.method, cpu.method);
    EXPECT_EQ(gpu.codeKind, cpu.codeKind);
    EXPECT_EQ(gpu.rows, cpu.rows);
    EXPECT_EQ(gpu.cols, cpu.cols);
    EXPECT_EQ(gpu.blockRows, cpu.blockRows);
    EXPECT_EQ(gpu.blockCols, cpu.blockCols);
    EXPECT_EQ(gpu.groupSize, cpu.groupSize);
    ASSERT_EQ(gpu.codes.size(), cpu.codes.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < cpu.codes.size(); ++i) differ += gpu.codes[i] != cpu.codes[i];
    EXPECT_EQ(differ, 0u) << "codes that differ";
    EXPECT_TRUE(sameBits(gpu.scales, cpu.scales)) << "scales differ";
    EXPECT_EQ(std::bit_cast<std::uint32_t>(gpu.globalScale), std::bit_cast<std::uint32_t>(cpu.globalScale));
    EXPECT_EQ(gpu.scaleCodes, cpu.scaleCodes);
    EXPECT_EQ(gpu.scaleScales, cpu.scaleScales);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(gpu.scaleOffset), std::bit_cast<std::uint32_t>(cpu.scaleOffset));
}

class GpuFormats : public GpuParity {};

TEST_F(GpuFormats, Fp8BlockMatchesTheCpu) {
    const MatrixF w = awkwardWeights(300, 520, 1);  // edge tiles in both directions
    const auto gpu = cuda().fp8(w, quant::Fp8Scaling::Block, 128);
    const auto cpu = this->cpu().fp8(w, quant::Fp8Scaling::Block, 128);
    expectSameParts(gpu, cpu);
    EXPECT_TRUE(sameBits(cuda().decode(gpu), this->cpu().decode(cpu)));
}

TEST_F(GpuFormats, Fp8PerChannelAndPerTensorMatchTheCpu) {
    const MatrixF w = awkwardWeights(257, 300, 2);
    for (auto scaling : {quant::Fp8Scaling::PerChannel, quant::Fp8Scaling::PerTensor}) {
        const auto gpu = cuda().fp8(w, scaling, 128);
        const auto cpu = this->cpu().fp8(w, scaling, 128);
        expectSameParts(gpu, cpu);
        EXPECT_TRUE(sameBits(cuda().decode(gpu), this->cpu().decode(cpu)));
    }
}

TEST_F(GpuFormats, Fp8CodesCoverEveryValueOfTheGrid) {
    // Every E4M3 value, the midpoints between neighbours (ties) and their neighbouring floats.
    MatrixF w(3, 256);
    for (int c = 0; c < 256; ++c) {
        const float v = static_cast<float>(c) * 1.75f - 224.0f;
        w(0, c) = v;
        w(1, c) = std::nextafter(v, 1e9f);
        w(2, c) = std::ldexp(static_cast<float>(c % 16) + 0.5f, -(c / 16) - 6);
    }
    w(0, 0) = 448.0f;
    expectSameParts(cuda().fp8(w, quant::Fp8Scaling::PerChannel, 128),
                    cpu().fp8(w, quant::Fp8Scaling::PerChannel, 128));
}

TEST_F(GpuFormats, Mxfp4MatchesTheCpu) {
    const MatrixF w = awkwardWeights(129, 200, 3);  // a last short block of 8
    const auto gpu = cuda().mxfp4(w);
    const auto cpu = this->cpu().mxfp4(w);
    expectSameParts(gpu, cpu);
    EXPECT_TRUE(sameBits(cuda().decode(gpu), this->cpu().decode(cpu)));
}

TEST_F(GpuFormats, Nvfp4MatchesTheCpu) {
    const MatrixF w = awkwardWeights(131, 200, 4);
    const auto gpu = cuda().nvfp4(w);
    const auto cpu = this->cpu().nvfp4(w);
    expectSameParts(gpu, cpu);
    EXPECT_TRUE(sameBits(cuda().decode(gpu), this->cpu().decode(cpu)));
}

TEST_F(GpuFormats, Nf4MatchesTheCpuWithAndWithoutDoubleQuantization) {
    const MatrixF w = awkwardWeights(70, 512, 5);
    for (bool doubleQuant : {false, true}) {
        quant::Nf4Options o;
        o.doubleQuant = doubleQuant;
        const auto gpu = cuda().nf4(w, o);
        const auto cpu = this->cpu().nf4(w, o);
        expectSameParts(gpu, cpu);
        EXPECT_TRUE(sameBits(cuda().decode(gpu), this->cpu().decode(cpu)));
    }
}

TEST_F(GpuFormats, Nf4RejectsWhatTheCpuRejects) {
    EXPECT_THROW(cuda().nf4(MatrixF::Ones(4, 100), {}), Error);
    quant::Nf4Options o;
    o.blockSize = 48;
    EXPECT_THROW(cuda().nf4(MatrixF::Ones(4, 96), o), Error);
}

TEST_F(GpuFormats, LargeMatrixMatchesTheCpu) {
    // Enough elements for the per-tensor amax to be split over many blocks.
    const MatrixF w = gaussian(1024, 4096, 6, 0.05f);
    expectSameParts(cuda().fp8(w, quant::Fp8Scaling::PerTensor, 128), cpu().fp8(w, quant::Fp8Scaling::PerTensor, 128));
    expectSameParts(cuda().nvfp4(w), cpu().nvfp4(w));
}

}  // namespace
}  // namespace qs::gpu::test
