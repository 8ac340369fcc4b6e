#pragma once
// The forward pass's own kernels (the linears' products are cuBLAS SGEMM): the bias add and a plain
// fused causal attention with grouped-query heads, as model::causalAttention computes them.
#include <cstdint>

namespace qs::gpu::kernels {

// y[t, o] += bias[o] for y row-major [rows, cols].
void addBiasRows(float* y, const float* bias, std::int64_t rows, std::int64_t cols);

// g[i] = g[i] / (1 + e^-g[i]) * u[i]: SiLU(gate) ⊙ up, in place in g.
void siluTimes(float* g, const float* u, std::int64_t count);

struct AttentionDims {
    std::int64_t queries = 0;  // Tq: the last Tq of the Tk key positions
    std::int64_t keys = 0;     // Tk
    int numHeads = 0;
    int numKvHeads = 0;
    int headDim = 0;        // at most kMaxHeadDim
    int slidingWindow = 0;  // 0: full causal
};
inline constexpr int kMaxHeadDim = 512;

// out [Tq, numHeads*headDim] = softmax(q kᵀ / sqrt(d), causal [and windowed]) v per head, one thread
// block per (query, head) with an online softmax over chunks of keys; all row-major on the device.
void causalAttention(const float* q, const float* k, const float* v, float* out, const AttentionDims& dims);

}  // namespace qs::gpu::kernels
