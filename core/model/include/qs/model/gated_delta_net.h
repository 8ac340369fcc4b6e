#pragma once
// Qwen3.5's Gated DeltaNet: a linear-attention layer whose memory is a recurrent state per value head instead
// of a KV cache (transformers' Qwen3_5GatedDeltaNet; Qwen3-Next's is the same). For x the layer's normed input:
//   [q | k | v] = silu(conv1d(in_proj_qkv(x)))   causal depthwise conv over time, kernel linear_conv_kernel_dim
//   z = in_proj_z(x), β = sigmoid(in_proj_b(x)), g = -exp(A_log) · softplus(in_proj_a(x) + dt_bias)   per head
//   q, k L2-normalised per key head (rsqrt(Σx² + 1e-6)), q scaled by key_head_dim^-1/2
//   per value head h, reading key head h / (value heads / key heads) (transformers' repeat_interleave):
//     S ← exp(g_t) S;   S ← S + k_t (β_t (v_t − Sᵀ k_t))ᵀ;   o_t = Sᵀ q_t         S [key_head_dim, value_head_dim]
//   y = out_proj(rms(o) · norm.weight · silu(z))   the gated RMSNorm per value head, weight not offset
// The state is f32 and the recurrence runs token by token: the plain sequential form, which transformers'
// chunked kernel computes too (its own docstring's reference, torch_recurrent_gated_delta_rule).
#include <vector>

#include "qs/matrix.h"

namespace qs::model {

// A layer's recurrent memory between calls: the last kernel - 1 rows of in_proj_qkv's output (the conv's
// history, zeros before the first token) and each value head's state S.
struct DeltaNetState {
    MatrixF convHistory;         // [kernel - 1, conv channels]; empty: zeros
    std::vector<MatrixF> heads;  // [value heads] of [key_head_dim, value_head_dim]; empty: zeros
};

// The causal depthwise conv1d then SiLU: out[t, c] = silu(Σ_j weight[c, j] · x[t - K + 1 + j, c]) with
// x[τ < 0] from `history` (its last rows; zeros when empty). weight [channels, K]; x [T, channels]. When
// `history` is given it is replaced by the last K - 1 rows of the extended input.
MatrixF causalConvSilu(const MatrixF& x, const MatrixF& weight, MatrixF* history = nullptr);

// The gated delta rule over T tokens: q, k [T, keyHeads · dk] (normalised and scaled as above), v
// [T, valueHeads · dv], g and beta [T, valueHeads]; returns o [T, valueHeads · dv]. `state` (optional) holds
// the heads' initial S (empty: zeros) and receives the final S.
MatrixF gatedDeltaRule(const MatrixF& q, const MatrixF& k, const MatrixF& v, const MatrixF& g, const MatrixF& beta,
                       int keyHeads, int valueHeads, std::vector<MatrixF>* state = nullptr);

// Each row's heads of `dim` scaled to unit L2 norm as transformers' l2norm: x · rsqrt(Σx² + eps).
void l2NormalizeHeadsInPlace(MatrixF& x, int dim, float eps = 1e-6f);

// torch's softplus (beta 1, threshold 20): x above 20, else log1p(exp(x)).
float softplus(float x);

}  // namespace qs::model
