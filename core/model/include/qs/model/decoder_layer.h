#pragma once
// One pre-norm decoder layer of a Llama-family transformer:
//   h = x + o_proj(attention(rope(norm_q(q_proj(n))), rope(norm_k(k_proj(n))), v_proj(n))),  n = rms(x)
//   y = h + down_proj(silu(gate_proj(m)) * up_proj(m)),                                      m = rms(h)
// or, in a sparse MoE layer, y = h + Σ_{e in top-k(m)} w_e · expert_e(m) (qs/model/moe_routing.h).
// The config's Architecture varies it as data: the norms' (1 + w) offset, Gemma's output norms on each
// sub-block before its residual add, the MLP's activation, per-layer windows and query_pre_attn_scalar
// (the caller passes the layer's RoPE: Gemma's sliding layers have their own base).
// The hook sees every distinct input of the layer's linears, which calibration turns into Hessians.
#include <functional>
#include <span>
#include <string_view>

#include "qs/matrix.h"
#include "qs/model/kv_cache.h"
#include "qs/model/layer_math.h"
#include "qs/model/layer_weights.h"
#include "qs/model/model_config.h"
#include "qs/model/rope.h"

namespace qs::model {

// One distinct input X of a decoder layer's linears. q/k/v read the same X, and so do gate/up: the
// hook is called once for each group, so calibration accumulates one XᵀX per group, not per module.
struct LinearInput {
    int layer = 0;
    std::span<const std::string_view> modules;  // e.g. {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}
    const MatrixF& x;                           // [T, in_features], rows in sequence order
    // An expert's input: how many of the tokens the router sent to it. x holds those tokens, or every
    // token of the sequence when the hook calibrates all experts (DecoderLayerContext). -1: no expert.
    std::int64_t routedTokens = -1;
    // When the hook calibrates all experts, their gate/up projections read one input (the block's):
    // it is shown once, `modules` naming every expert's gate and up, and this gives each module's
    // routed tokens in the same order (routedTokens is -1 then).
    std::span<const std::int64_t> routedPerModule = {};
};
using LinearInputHook = std::function<void(const LinearInput&)>;

// The keys (after the q/k norm and RoPE) and the values of a decoder layer, as a KV cache stores them:
// what calibrates the FP8 cache's k_scale and v_scale.
struct KeyValues {
    int layer = 0;
    const MatrixF& keys;    // [T, kvDim]
    const MatrixF& values;  // [T, kvDim]
};
using KeyValueHook = std::function<void(const KeyValues&)>;

struct DecoderLayerContext {
    const ModelConfig& config;
    const RotaryEmbedding& rope;
    int layer = 0;             // index, for the hook and the KV cache
    int firstPosition = 0;     // position of hidden's first row
    KvCache* cache = nullptr;  // when set, keys/values are appended and attention spans the cache
    const LinearInputHook* hook = nullptr;
    const KeyValueHook* keyValueHook = nullptr;
    const LayerMath* math = nullptr;  // where the GEMMs and attention run; null: cpuLayerMath()
    // MoE calibration: show the hook every expert's input on every token (the layer's output still
    // routes as the model does), so that rarely chosen experts get Hessians from all the text.
    bool hookSeesAllTokens = false;
    // Only the hooks read this pass (calibration's observation): the work whose only reader is the layer's
    // output (down projections, the experts' weighted sum, the shared expert's gate) is skipped, and
    // `hidden` is left as the attention block's residual. The hooks see the same inputs, bit for bit.
    bool outputUnread = false;
};

// Runs the layer over hidden [T, hiddenSize] in place. A linear with Linear::input set reads its input
// quantized as the serving engine would (linears that share an input share one quantization of it);
// k_proj / v_proj with a cacheScale have their rotated keys / values FP8-quantized before attention.
void runDecoderLayer(const LayerWeights& weights, MatrixF& hidden, const DecoderLayerContext& context);

}  // namespace qs::model
