// The AWQ α search on the device against the CPU with the same statistics, on Llama-like shapes
// (three linears reading one 512-wide input, group 128): every grid error within 1e-4 relative, and
// then the same α, codes and scales, since the CPU's own code finishes from the grid.
#include <gtest/gtest.h>

#include <cmath>

#include "qs/error.h"
#include "qs/quant/hessian.h"

#include "cuda_awq.h"
#include "gpu_test_support.h"

namespace qs::gpu::test {
namespace {

constexpr std::int64_t kFeatures = 512;

// Correlated inputs with outlier channels (what makes α > 0 pay) and one dead channel.
MatrixF calibrationInputs(std::uint32_t seed) {
    const MatrixF mix = gaussian(kFeatures, kFeatures, seed + 1, 0.3f) + MatrixF::Identity(kFeatures, kFeatures);
    MatrixF x = gaussian(1024, kFeatures, seed) * mix;
    x.col(3).setZero();
    for (std::int64_t c = 5; c < kFeatures; c += 97) x.col(c) *= 12.0f;
    return x;
}

class GpuAwq : public GpuParity {
protected:
    void SetUp() override {
        GpuParity::SetUp();
        if (IsSkipped()) return;
        const MatrixF x = calibrationInputs(41);
        quant::HessianAccumulator acc(kFeatures);
        acc.add(x);
        h_ = acc.finalize();
        meanAbs_ = acc.meanAbs();
        for (std::uint32_t i = 0; i < 3; ++i) linears_.push_back(gaussian(256, kFeatures, 50 + i, 0.02f));
        for (const MatrixF& w : linears_) weights_.push_back(&w);
    }

    void expectGridNear(const std::vector<double>& gpu, const std::vector<double>& cpu) const {
        ASSERT_EQ(gpu.size(), cpu.size());
        for (std::size_t i = 0; i < cpu.size(); ++i)
            EXPECT_NEAR(gpu[i], cpu[i], 1e-4 * std::abs(cpu[i])) << "step " << i;
    }

    MatrixF h_;
    VectorF meanAbs_;
    std::vector<MatrixF> linears_;
    std::vector<const MatrixF*> weights_;
};

TEST_F(GpuAwq, SameAlphaCodesAndScalesAsTheCpu) {
    for (const bool sym : {false, true}) {
        SCOPED_TRACE(sym ? "symmetric" : "asymmetric");
        const quant::AwqOptions o{.bits = 4, .groupSize = 128, .sym = sym};
        const quant::AwqResult gpu = cuda().awq(weights_, meanAbs_, h_, o);
        const quant::AwqResult cpu = this->cpu().awq(weights_, meanAbs_, h_, o);
        expectGridNear(gpu.gridError, cpu.gridError);
        EXPECT_GT(cpu.alpha, 0.0) << "the case does not exercise the scales";
        EXPECT_EQ(gpu.alpha, cpu.alpha);
        EXPECT_EQ(gpu.scales, cpu.scales);
        ASSERT_EQ(gpu.linears.size(), 3u);
        for (std::size_t i = 0; i < 3; ++i) {
            EXPECT_EQ(gpu.linears[i].codes, cpu.linears[i].codes) << "linear " << i;
            EXPECT_TRUE(sameBits(gpu.linears[i].scales, cpu.linears[i].scales)) << "linear " << i;
            EXPECT_TRUE(sameBits(gpu.linears[i].zeros, cpu.linears[i].zeros)) << "linear " << i;
            EXPECT_EQ(gpu.linears[i].outputMse, cpu.linears[i].outputMse) << "linear " << i;
        }
    }
}

TEST_F(GpuAwq, OddGroupsAndFewCandidatesPerPass) {
    // 3 bits, groups of 96 (the last one partial) and the grid in passes of 3 α (the last one of 2).
    const quant::AwqOptions o{.bits = 3, .groupSize = 96};
    const CudaContext context;
    const std::vector<double> gpu = cudaAwqGridErrors(context, weights_, meanAbs_, h_, o, 3);
    expectGridNear(gpu, this->cpu().awq(weights_, meanAbs_, h_, o).gridError);
    const quant::AwqOptions perRow{.bits = 8, .groupSize = -1, .sym = true, .grid = 7};
    expectGridNear(cudaAwqGridErrors(context, weights_, meanAbs_, h_, perRow),
                   this->cpu().awq(weights_, meanAbs_, h_, perRow).gridError);
}

TEST_F(GpuAwq, OptionsTheDeviceDoesNotSearchGoToTheCpu) {
    const quant::AwqOptions gptqGrid{.rule = quant::GridRule::AutoGptq, .grid = 5};
    EXPECT_FALSE(awqRunsOnDevice(weights_, meanAbs_, h_, gptqGrid));
    const quant::AwqResult gpu = cuda().awq(weights_, meanAbs_, h_, gptqGrid);
    EXPECT_EQ(gpu.gridError, this->cpu().awq(weights_, meanAbs_, h_, gptqGrid).gridError);
    const MatrixF narrow = gaussian(8, kFeatures - 1, 60);
    EXPECT_THROW(cuda().awq({&narrow}, meanAbs_, h_, {}), Error) << "the CPU's shape error";
}

}  // namespace
}  // namespace qs::gpu::test
