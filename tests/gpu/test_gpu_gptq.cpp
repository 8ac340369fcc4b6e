// GPTQ on the device against the CPU with the same H: codes identical on >= 99.9% of the weights
// and the output error within 1%, for every grid rule the CPU implements.
#include <gtest/gtest.h>

#include "qs/error.h"
#include "qs/quant/hessian.h"

#include "gpu_test_support.h"

namespace qs::gpu::test {
namespace {

// Correlated inputs (what makes GPTQ differ from RTN), one dead channel, outlier channels.
MatrixF calibrationHessian(std::int64_t features, std::uint32_t seed) {
    const MatrixF base = gaussian(1536, features, seed);
    const MatrixF mix = gaussian(features, features, seed + 1, 0.3f) + MatrixF::Identity(features, features);
    MatrixF x = base * mix;
    x.col(3).setZero();
    x.col(5) *= 8.0f;
    return quant::hessian(x);
}

struct Case {
    const char* name;
    quant::GptqOptions options;
};

std::vector<Case> cases() {
    std::vector<Case> all;
    quant::GptqOptions o;
    all.push_back({"default 4-bit g128", o});
    o.sym = false;
    all.push_back({"asymmetric", o});
    o = {};
    o.actOrder = true;
    all.push_back({"act-order", o});
    o.staticGroups = true;
    all.push_back({"act-order static groups", o});
    o = {};
    o.groupSize = 96;  // groups straddle the 128-column blocks
    o.bits = 3;
    all.push_back({"3-bit g96", o});
    o = {};
    o.groupSize = -1;
    o.rule = quant::GridRule::AutoAwq;
    o.bits = 8;
    all.push_back({"8-bit per row, AWQ grid", o});
    return all;
}

class GpuGptq : public GpuParity {};

TEST_F(GpuGptq, CodesAndErrorMatchTheCpu) {
    const std::int64_t rows = 384, cols = 512;
    const MatrixF w = gaussian(rows, cols, 21, 0.02f);
    const MatrixF h = calibrationHessian(cols, 22);
    for (const Case& c : cases()) {
        SCOPED_TRACE(c.name);
        const auto gpu = cuda().gptq(w, h, c.options);
        const auto cpu = this->cpu().gptq(w, h, c.options);
        ASSERT_EQ(gpu.codes.size(), cpu.codes.size());
        std::size_t same = 0;
        for (std::size_t i = 0; i < cpu.codes.size(); ++i) same += gpu.codes[i] == cpu.codes[i];
        EXPECT_GE(static_cast<double>(same) / static_cast<double>(cpu.codes.size()), 0.999);
        EXPECT_NEAR(gpu.outputError, cpu.outputError, 0.01 * cpu.outputError);
        EXPECT_NEAR(gpu.gptqLoss, cpu.gptqLoss, 0.01 * cpu.gptqLoss);
        EXPECT_EQ(gpu.dampPercent, cpu.dampPercent);
        EXPECT_EQ(gpu.gIdx, cpu.gIdx);
        EXPECT_EQ(gpu.scales.rows(), cpu.scales.rows());
        EXPECT_EQ(gpu.scales.cols(), cpu.scales.cols());
        EXPECT_LT((gpu.scales - cpu.scales).cwiseAbs().maxCoeff(), 1e-3f * cpu.scales.cwiseAbs().maxCoeff());
        // The decoded weights are as close as the codes say.
        EXPECT_LT((gpu.dequantize() - cpu.dequantize()).norm(), 0.05 * (w - cpu.dequantize()).norm());
    }
}

TEST_F(GpuGptq, RaisesTheDampingLikeTheCpu) {
    // A rank-deficient H shifted down by 0.1% of its mean diagonal is indefinite: no damping below
    // 0.1% can factor it, 0.25% (the first increment) can. Both backends must take the same steps.
    MatrixF h = quant::hessian(gaussian(64, 256, 31));
    const float shift = 0.001f * h.diagonal().mean();
    h.diagonal().array() -= shift;
    quant::GptqOptions o;
    o.dampPercent = 0.0;
    const MatrixF w = gaussian(64, 256, 32, 0.02f);
    const auto gpu = cuda().gptq(w, h, o);
    const auto cpu = this->cpu().gptq(w, h, o);
    EXPECT_EQ(cpu.dampPercent, o.dampIncrement);
    EXPECT_EQ(gpu.dampPercent, cpu.dampPercent);
    EXPECT_NEAR(gpu.gptqLoss, cpu.gptqLoss, 0.01 * cpu.gptqLoss);
}

// The device's gptqConsuming (the Job's path: the host's H freed once uploaded) gives gptq's result
// bit for bit, act-order and a damping retry included: the retry factors the device's own copy.
TEST_F(GpuGptq, ConsumingHGivesTheSameResult) {
    const MatrixF w = gaussian(96, 256, 61, 0.02f);
    MatrixF h = quant::hessian(gaussian(64, 256, 62));  // rank 64: shifted down, indefinite below 0.1% damping
    h.diagonal().array() -= 0.001f * h.diagonal().mean();
    quant::GptqOptions o;
    o.dampPercent = 0.0;
    o.actOrder = true;
    o.groupSize = 64;
    const auto plain = cuda().gptq(w, h, o);
    const auto consumed = cuda().gptqConsuming(w, MatrixF(h), o);
    EXPECT_EQ(plain.dampPercent, o.dampIncrement);
    EXPECT_EQ(consumed.codes, plain.codes);
    EXPECT_EQ(consumed.scales, plain.scales);
    EXPECT_EQ(consumed.zeros, plain.zeros);
    EXPECT_EQ(consumed.gIdx, plain.gIdx);
    EXPECT_EQ(consumed.gptqLoss, plain.gptqLoss);
    EXPECT_EQ(consumed.dampPercent, plain.dampPercent);
}

TEST_F(GpuGptq, RejectsWhatTheCpuRejects) {
    const MatrixF w = gaussian(8, 64, 41);
    EXPECT_THROW(cuda().gptq(w, MatrixF::Identity(32, 32), {}), Error);
    quant::GptqOptions o;
    o.bits = 9;
    EXPECT_THROW(cuda().gptq(w, MatrixF::Identity(64, 64), o), Error);
}

TEST_F(GpuGptq, StopsWhenCancelled) {
    // 1024 columns = 8 blocks: the loop polls the token after its first 4 blocks.
    const qs::CancelToken cancel;
    cancel.cancel();
    quant::GptqOptions o;
    o.cancel = &cancel;
    EXPECT_THROW(cuda().gptq(gaussian(64, 1024, 51, 0.02f), MatrixF::Identity(1024, 1024), o), Cancelled);
}

}  // namespace
}  // namespace qs::gpu::test
