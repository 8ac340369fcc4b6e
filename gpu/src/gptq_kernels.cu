// The GPTQ column loop of one block, one thread per row: gptq.cpp blockChunk line by line (the grid
// rules of rtn.cpp gridParams and rtn.h quantizeCode as device functions). Products are rounded
// before the sums (--fmad=false), as on the CPU.
#include "cuda_check.h"
#include "format_codes.cuh"
#include "gptq_kernels.h"
#include "int_grid.cuh"
#include "launch.h"

namespace qs::gpu::kernels {
namespace {

using codes::stdMax;
using codes::stdMin;

using grid::dequantizeCode;
using grid::Grid;
using grid::gridParams;
using grid::quantizeCode;

__global__ void gptqBlockKernel(GptqBlockArgs a) {
    const std::int64_t r = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
    if (r >= a.rows) return;
    const std::int64_t bw = a.i2 - a.i1, cols = a.cols;
    float wb[kGptqMaxBlock];
    float* wRow = a.w + r * cols;
    for (std::int64_t i = 0; i < bw; ++i) wb[i] = wRow[a.i1 + i];
    Grid grid{1.0f, 0.0f};
    double loss = 0.0;
    int currentGroup = -1;
    for (std::int64_t i = 0; i < bw; ++i) {
        const std::int64_t col = a.i1 + i;
        const int g = static_cast<int>(col / a.groupCols);
        if (a.staticScales) {
            const int sg = a.perm[col] / a.groupCols;
            grid = {a.staticScales[r * a.groups + sg], a.staticZeros[r * a.groups + sg]};
        } else if (g != currentGroup && col % a.groupCols != 0) {
            currentGroup = g;  // a group that began in an earlier block
            grid = {a.scales[r * a.groups + g], a.zeros[r * a.groups + g]};
        } else if (g != currentGroup) {
            currentGroup = g;
            const std::int64_t groupEnd = min(static_cast<std::int64_t>(g + 1) * a.groupCols, cols);
            const std::int64_t inBlock = min(groupEnd, a.i2) - col;
            float lo = wb[i], hi = lo;
            for (std::int64_t c = i; c < i + inBlock; ++c) {
                lo = stdMin(lo, wb[c]);
                hi = stdMax(hi, wb[c]);
            }
            for (std::int64_t c = a.i2; c < groupEnd; ++c) {
                float v = wRow[c];  // with this block's pending (lazy) updates applied
                for (std::int64_t k = 0; k < i; ++k) v -= a.err[k * a.rows + r] * a.u[(a.i1 + k) * cols + c];
                lo = stdMin(lo, v);
                hi = stdMax(hi, v);
            }
            grid = gridParams(lo, hi, a.bits, a.sym, a.autoGptqRule);
            a.scales[r * a.groups + g] = grid.scale;
            a.zeros[r * a.groups + g] = grid.zero;
        }
        const float d = a.u[col * cols + col];
        const float wv = wb[i];
        const float q = quantizeCode(wv, grid, a.maxq);
        a.codes[col * a.rows + r] = static_cast<std::uint8_t>(q);
        const float e = (wv - dequantizeCode(q, grid)) / d;
        a.err[i * a.rows + r] = e;
        loss += static_cast<double>(e) * static_cast<double>(e);
        const float* uRow = a.u + col * cols + a.i1;
        for (std::int64_t c = i + 1; c < bw; ++c) wb[c] -= e * uRow[c];
    }
    for (std::int64_t i = 0; i < bw; ++i) wRow[a.i1 + i] = wb[i];
    a.loss[r] += loss;
}

__global__ void reverseWithDampingKernel(const float* h, std::int64_t n, float lambda, float* a) {
    for (std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; idx < n * n;
         idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t i = idx / n, j = idx % n;
        float v = h[(n - 1 - i) * n + (n - 1 - j)];
        if (i == j) v += lambda;
        a[idx] = v;
    }
}

__global__ void upperFromReversedInverseKernel(const float* l, std::int64_t n, float* u) {
    for (std::int64_t idx = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; idx < n * n;
         idx += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t i = idx / n, j = idx % n;
        // U(i, j) = L⁻¹(n-1-i, n-1-j); L⁻¹ column-major: element (row, col) at col * n + row.
        u[idx] = j < i ? 0.0f : l[(n - 1 - j) * n + (n - 1 - i)];
    }
}

}  // namespace

void reverseWithDamping(const float* h, std::int64_t n, float lambda, float* a) {
    reverseWithDampingKernel<<<gridFor(n * n), kThreads>>>(h, n, lambda, a);
    QS_CUDA_LAUNCHED("reverseWithDampingKernel");
}

void upperFromReversedInverse(const float* l, std::int64_t n, float* u) {
    upperFromReversedInverseKernel<<<gridFor(n * n), kThreads>>>(l, n, u);
    QS_CUDA_LAUNCHED("upperFromReversedInverseKernel");
}

void gptqBlock(const GptqBlockArgs& args) {
    constexpr int threads = 128;
    gptqBlockKernel<<<gridFor(args.rows, threads), threads>>>(args);
    QS_CUDA_LAUNCHED("gptqBlockKernel");
}

}  // namespace qs::gpu::kernels
