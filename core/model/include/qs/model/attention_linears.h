#pragma once
// The linears of a decoder layer as its config shapes them, in one place: which modules a layer's attention
// is made of (Llama's q/k/v/o or DeepSeek-V3's latent attention), their shapes, the biases the config
// announces, and which of them read one input (one Hessian, one AWQ scale, one fused serving kernel). The
// weights' readers, calibration, the methods' groups and the exports all ask here instead of assuming
// q, k, v and o.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "qs/model/model_config.h"

namespace qs::model {

// One linear of a decoder layer: its module relative to the layer ("self_attn.q_proj"), [out, in], and
// whether the config announces a bias (a checkpoint may hold one it does not announce).
struct LinearShape {
    std::string module;
    std::int64_t out = 0;
    std::int64_t in = 0;
    bool bias = false;
};

// The attention's modules of `layout` grouped by the input they read, in the order the forward pass reads
// them: {q, k, v} (the normed hidden state) and {o} (the attention's output); or {q_a | q, kv_a} (the normed
// hidden state), {q_b} (q_a_layernorm's output), {kv_b} (kv_a_layernorm's output) and {o}.
std::vector<std::vector<std::string_view>> attentionInputModules(AttentionLayout layout);

// attentionInputModules, one after the other: q, k, v, o; or q_a (q), kv_a, q_b, kv_b, o.
std::vector<std::string_view> attentionModules(AttentionLayout layout);

// attentionInputModules of layer `layer`'s layout with each linear's shape and bias (-1: the full attention
// layers'; Qwen3.5's linear_attention layers have their own).
std::vector<std::vector<LinearShape>> attentionInputGroups(const ModelConfig& config, int layer = -1);

// attentionInputGroups, one after the other.
std::vector<LinearShape> attentionLinears(const ModelConfig& config, int layer = -1);

// A dense layer's MLP: gate, up (the norm's output), down (their gated product).
std::vector<LinearShape> denseMlpLinears(const ModelConfig& config);

// attentionLinears, then the dense MLP's: the linears of a layer without experts.
std::vector<LinearShape> denseLayerLinears(const ModelConfig& config, int layer = -1);

}  // namespace qs::model
