// The CUDA backend's prediction of a job's peak device memory: plain arithmetic, so it runs without
// a device. The figures are checked against the allocations it models, worked out by hand below.
#include <gtest/gtest.h>

#include "device_plan.h"

namespace qs::gpu::test {
namespace {

pipeline::DeviceWorkload llama(int hidden, int intermediate, int heads, int kvHeads, std::int64_t tokens) {
    pipeline::DeviceWorkload w;
    w.config.hiddenSize = hidden;
    w.config.intermediateSize = intermediate;
    w.config.numHeads = heads;
    w.config.numKvHeads = kvHeads;
    w.config.headDim = hidden / heads;
    w.sequenceLength = tokens;
    w.statistics = true;
    w.gptq = true;
    return w;
}

TEST(CudaDevicePlan, Llama3_8BGptqAtItsPeak) {
    const pipeline::DeviceWorkload w = llama(4096, 14336, 32, 8, 2048);
    // Forward buffers: 3 x 2048 x 14336 f32 + a 14336 x 4096 weight + keys and values = 0.60e9 bytes.
    // Sinks at the end of calibration: three 4096-wide (12 n² + 16 n + 2 x 2048 x n x 4 = 268.6e6 each)
    // and the 14336-wide down_proj input (2.701e9); with GPTQ of q_proj (0.357e9): 3.86e9, 4.47e9 with the forward buffers.
    const double peak = double(cudaPeakDeviceBytes(w));
    EXPECT_GT(peak, 4.3e9);
    EXPECT_LT(peak, 4.7e9);
}

TEST(CudaDevicePlan, GrowsWithTheWorkAndWithTheModel) {
    pipeline::DeviceWorkload w = llama(4096, 14336, 32, 8, 2048);
    const std::int64_t gptq = cudaPeakDeviceBytes(w);
    w.gptq = false;
    const std::int64_t statisticsOnly = cudaPeakDeviceBytes(w);
    w.statistics = false;
    const std::int64_t forwardOnly = cudaPeakDeviceBytes(w);
    EXPECT_GT(gptq, statisticsOnly);
    EXPECT_GT(statisticsOnly, forwardOnly);
    w.sequenceLength = 4096;
    EXPECT_GT(cudaPeakDeviceBytes(w), forwardOnly);
    // Llama-3-70B: its down_proj input alone holds 12 x 28672² bytes (9.9e9) of sums; with the other
    // three inputs, GPTQ of q_proj and the forward buffers 16.0e9, more than a 12 GiB card has.
    const double seventy = double(cudaPeakDeviceBytes(llama(8192, 28672, 64, 8, 2048)));
    EXPECT_GT(seventy, 15.5e9);
    EXPECT_LT(seventy, 16.5e9);
}

TEST(CudaDevicePlan, AwqNeedsItsLargestGroupsOneAlphaAtATime) {
    pipeline::DeviceWorkload w = llama(4096, 14336, 32, 8, 2048);
    w.gptq = false;
    const std::int64_t statisticsOnly = cudaPeakDeviceBytes(w);
    w.awq = true;
    EXPECT_GT(cudaPeakDeviceBytes(w), statisticsOnly);
}

}  // namespace
}  // namespace qs::gpu::test
