#pragma once
// Names a tensor's place in a transformer: decoder layer, module and part, for Llama, Mistral,
// Qwen2, Qwen3 and Gemma-style names ("model.layers.7.mlp.down_proj.weight" -> layer 7,
// module "mlp.down_proj", part "weight", role Linear).
#include <string>
#include <string_view>

namespace qs::io {

// Layer indices at or past this are not read as layers (no model has a million decoder layers).
inline constexpr int kMaxLayerIndex = 1'000'000;

enum class TensorRole { Embedding, Norm, Linear, LmHead, Other };

struct TensorName {
    int layer = -1;      // decoder layer index (0 .. kMaxLayerIndex - 1), -1 outside the layers
    std::string module;  // e.g. "self_attn.q_proj", "input_layernorm", "embed_tokens", "lm_head"
    std::string part;    // e.g. "weight", "bias", "qweight", "scales", "weight_scale_inv"
    TensorRole role = TensorRole::Other;
    // The token after a layer container ("layers") is a signed or too large number ("-1", "+3",
    // "99999999999"): the name looks like a decoder layer's but names none, so a loader leaves it unused.
    bool badLayerIndex = false;
};

TensorName parseTensorName(std::string_view fullName);

// A tensor of a vision or audio tower, or of the projector that feeds the text model (its name says
// "vision", "visual", "audio", "multi_modal_projector" or "mm_projector"): no part of the text decoder,
// whose layers its "encoder.layers.N." must not be taken for.
bool isTowerTensor(std::string_view name);

// A MoE router or a shared expert's gate, which stays dense: "mlp.gate", "block_sparse_moe.gate",
// "mlp.router", "mlp.shared_expert_gate" (a dense MLP's "gate_proj" is a linear like any other).
bool isRouterModule(std::string_view module);

}  // namespace qs::io
