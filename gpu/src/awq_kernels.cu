// The AWQ search's fake quantization, one warp per (candidate, row, group): the group's range by a
// warp reduction (min and max do not depend on the order), then rtn.cpp gridParams (AutoAWQ rule)
// and rtn.h quantizeCode per element. Products are rounded alone (--fmad=false), as on the CPU.
#include <cmath>

#include "awq_kernels.h"
#include "cuda_check.h"
#include "format_codes.cuh"
#include "int_grid.cuh"
#include "launch.h"

namespace qs::gpu::kernels {
namespace {

using codes::stdMax;
using codes::stdMin;

constexpr unsigned kFullWarp = 0xFFFFFFFFu;

__device__ void warpRange(float& lo, float& hi) {
    for (int offset = 16; offset > 0; offset /= 2) {
        lo = stdMin(lo, __shfl_xor_sync(kFullWarp, lo, offset));
        hi = stdMax(hi, __shfl_xor_sync(kFullWarp, hi, offset));
    }
}

__device__ double warpSum(double v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullWarp, v, offset);
    return v;
}

__global__ void awqFakeQuantKernel(AwqFakeQuantArgs a) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const std::int64_t groups = (a.cols + a.groupCols - 1) / a.groupCols;
    const std::int64_t items = a.candidates * a.rows * groups;
    const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / 32;
    const float maxq = static_cast<float>((1 << a.bits) - 1);
    // Whole warps take an item together, so the shuffles see every lane.
    for (std::int64_t item = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32; item < items;
         item += warps) {
        const std::int64_t g = item % groups, kr = item / groups;
        const std::int64_t r = kr % a.rows, k = kr / a.rows;
        const std::int64_t c0 = g * a.groupCols, count = min(a.groupCols, a.cols - c0);
        const float* w = a.w + r * a.cols + c0;
        const float* s = a.s + k * a.cols + c0;
        float lo = INFINITY, hi = -INFINITY;
        for (std::int64_t c = lane; c < count; c += 32) {
            const float v = w[c] * s[c];
            lo = stdMin(lo, v);
            hi = stdMax(hi, v);
        }
        warpRange(lo, hi);
        const grid::Grid p = grid::gridParams(lo, hi, a.bits, a.sym, false);  // the AutoAwq rule
        float* d = a.d + kr * a.cols + c0;
        for (std::int64_t c = lane; c < count; c += 32) {
            const float code = grid::quantizeCode(w[c] * s[c], p, maxq);
            d[c] = grid::dequantizeCode(code, p) / s[c] - w[c];
        }
    }
}

__global__ void halfRowDotsKernel(const float* dh, const float* d, std::int64_t rows, std::int64_t cols, double* out) {
    const int lane = static_cast<int>(threadIdx.x % 32);
    const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / 32;
    for (std::int64_t r = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32; r < rows;
         r += warps) {
        double sum = 0.0;
        for (std::int64_t c = lane; c < cols; c += 32)
            sum += static_cast<double>(dh[r * cols + c]) * static_cast<double>(d[r * cols + c]);
        sum = warpSum(sum);
        if (lane == 0) out[r] = 0.5 * sum;
    }
}

}  // namespace

void awqFakeQuantError(const AwqFakeQuantArgs& args) {
    const std::int64_t groups = (args.cols + args.groupCols - 1) / args.groupCols;
    awqFakeQuantKernel<<<gridFor(args.candidates * args.rows * groups * 32), kThreads>>>(args);
    QS_CUDA_LAUNCHED("awqFakeQuantKernel");
}

void halfRowDots(const float* dh, const float* d, std::int64_t rows, std::int64_t cols, double* out) {
    halfRowDotsKernel<<<gridFor(rows * 32), kThreads>>>(dh, d, rows, cols, out);
    QS_CUDA_LAUNCHED("halfRowDotsKernel");
}

}  // namespace qs::gpu::kernels
