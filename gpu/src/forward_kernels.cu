#include <cmath>

#include <cub/block/block_reduce.cuh>

#include "cuda_check.h"
#include "forward_kernels.h"
#include "launch.h"

namespace qs::gpu::kernels {
namespace {

__global__ void addBiasKernel(float* y, const float* bias, std::int64_t rows, std::int64_t cols) {
    const std::int64_t n = rows * cols;
    for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
        y[i] += bias[i % cols];
}

__global__ void siluTimesKernel(float* g, const float* u, std::int64_t n) {
    for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

constexpr int kAttentionThreads = 128;  // also the keys scored per step
constexpr int kWarps = kAttentionThreads / 32;
constexpr int kDimsPerThread = kMaxHeadDim / kAttentionThreads;
using BlockReduce = cub::BlockReduce<float, kAttentionThreads>;

struct MaxOp {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
    __device__ float operator()(float a, float b) const { return a + b; }
};

// The block's reduction of `value` with `op`, handed to every thread.
template <typename Op>
__device__ float blockAll(float value, Op op, BlockReduce::TempStorage& temp, float& shared) {
    const float r = BlockReduce(temp).Reduce(value, op);
    if (threadIdx.x == 0) shared = r;
    __syncthreads();
    const float all = shared;
    __syncthreads();
    return all;
}

// blockIdx.x: query i (position offset + i); blockIdx.y: head h. Each step scores 128 keys (a warp
// per key, lanes over the head's dimensions, so the reads of k are coalesced), rescales the running
// sums to the new maximum and accumulates p·v with a thread per output dimension.
__global__ void __launch_bounds__(kAttentionThreads)
    attentionKernel(const float* q, const float* k, const float* v, float* out, AttentionDims dims, float scale) {
    __shared__ float query[kMaxHeadDim];
    __shared__ float weights[kAttentionThreads];
    __shared__ typename BlockReduce::TempStorage temp;
    __shared__ float reduced;

    const int d = dims.headDim;
    const std::int64_t i = blockIdx.x;
    const int h = blockIdx.y;
    const int kvHead = h / (dims.numHeads / dims.numKvHeads);
    const std::int64_t qStride = static_cast<std::int64_t>(dims.numHeads) * d;
    const std::int64_t kvStride = static_cast<std::int64_t>(dims.numKvHeads) * d;
    const std::int64_t last = dims.keys - dims.queries + i;
    const std::int64_t windowStart = last - dims.slidingWindow + 1;
    const std::int64_t first = dims.slidingWindow > 0 && windowStart > 0 ? windowStart : 0;
    const float* kHead = k + static_cast<std::int64_t>(kvHead) * d;
    const float* vHead = v + static_cast<std::int64_t>(kvHead) * d;

    for (int e = threadIdx.x; e < d; e += kAttentionThreads)
        query[e] = q[i * qStride + static_cast<std::int64_t>(h) * d + e];
    __syncthreads();

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float runningMax = -INFINITY, runningSum = 0.0f;
    float acc[kDimsPerThread] = {};
    for (std::int64_t j0 = first; j0 <= last; j0 += kAttentionThreads) {
        for (int slot = warp; slot < kAttentionThreads; slot += kWarps) {
            const std::int64_t j = j0 + slot;
            float dot = 0.0f;
            if (j <= last)
                for (int e = lane; e < d; e += 32) dot += query[e] * kHead[j * kvStride + e];
            for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
            if (lane == 0) weights[slot] = j <= last ? dot * scale : -INFINITY;
        }
        __syncthreads();
        const float score = weights[threadIdx.x];
        const float newMax = fmaxf(runningMax, blockAll(score, MaxOp{}, temp, reduced));
        const float p = score == -INFINITY ? 0.0f : expf(score - newMax);
        weights[threadIdx.x] = p;
        const float stepSum = blockAll(p, SumOp{}, temp, reduced);  // also orders the write of weights
        const float rescale = runningMax == -INFINITY ? 0.0f : expf(runningMax - newMax);
        runningSum = runningSum * rescale + stepSum;
        runningMax = newMax;
        const int count = last - j0 + 1 < kAttentionThreads ? static_cast<int>(last - j0 + 1) : kAttentionThreads;
        for (int r = 0; r < kDimsPerThread; ++r) {
            const int e = threadIdx.x + r * kAttentionThreads;
            if (e >= d) break;
            float sum = 0.0f;
            for (int s = 0; s < count; ++s) sum += weights[s] * vHead[(j0 + s) * kvStride + e];
            acc[r] = acc[r] * rescale + sum;
        }
        __syncthreads();  // weights are rewritten by the next step
    }
    for (int r = 0; r < kDimsPerThread; ++r) {
        const int e = threadIdx.x + r * kAttentionThreads;
        if (e < d) out[i * qStride + static_cast<std::int64_t>(h) * d + e] = acc[r] / runningSum;
    }
}

}  // namespace

void addBiasRows(float* y, const float* bias, std::int64_t rows, std::int64_t cols) {
    addBiasKernel<<<gridFor(rows * cols), kThreads>>>(y, bias, rows, cols);
    QS_CUDA_LAUNCHED("addBiasKernel");
}

void siluTimes(float* g, const float* u, std::int64_t count) {
    siluTimesKernel<<<gridFor(count), kThreads>>>(g, u, count);
    QS_CUDA_LAUNCHED("siluTimesKernel");
}

void causalAttention(const float* q, const float* k, const float* v, float* out, const AttentionDims& dims) {
    if (dims.queries == 0) return;
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dims.headDim)));
    const dim3 grid(static_cast<unsigned>(dims.queries), static_cast<unsigned>(dims.numHeads));
    attentionKernel<<<grid, kAttentionThreads>>>(q, k, v, out, dims, scale);
    QS_CUDA_LAUNCHED("attentionKernel");
}

}  // namespace qs::gpu::kernels
