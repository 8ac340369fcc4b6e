// The name table between llama.cpp's tensor names and Hugging Face's (gguf-py constants.py,
// MODEL_TENSOR -> TENSOR_NAMES, and tensor_mapping.py for the Llama/Qwen names), with each family's
// overrides applied first.
#include "qs/architectures/gguf_tensor_names.h"

#include <array>
#include <cctype>
#include <utility>

namespace qs::architectures {

namespace {

constexpr std::array<GgufName, 3> kTopLevel = {{
    {"token_embd", "model.embed_tokens"},
    {"output_norm", "model.norm"},
    {"output", "lm_head"},
}};

constexpr std::array<GgufName, 12> kPerLayer = {{
    {"attn_norm", "input_layernorm"},
    {"attn_qkv", "self_attn.qkv_proj"},  // a fused q/k/v (Phi-3)
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
}};

constexpr std::string_view kGgufLayer = "blk.";
constexpr std::string_view kHfLayer = "model.layers.";

// "weight" or "bias": the parameter suffixes both namings share.
bool knownPart(std::string_view part) { return part == "weight" || part == "bias"; }

// Splits "<module>.<part>" at its last dot.
std::optional<std::pair<std::string_view, std::string_view>> splitPart(std::string_view name) {
    const auto dot = name.rfind('.');
    if (dot == std::string_view::npos || !knownPart(name.substr(dot + 1))) return std::nullopt;
    return std::make_pair(name.substr(0, dot), name.substr(dot + 1));
}

// "<digits>.<rest>" -> {digits, rest}.
std::optional<std::pair<std::string_view, std::string_view>> splitLayer(std::string_view name) {
    std::size_t digits = 0;
    while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
    if (digits == 0 || digits >= name.size() || name[digits] != '.') return std::nullopt;
    return std::make_pair(name.substr(0, digits), name.substr(digits + 1));
}

std::string_view side(const GgufName& n, bool gguf) { return gguf ? n.gguf : n.hf; }

// A family's parameter override (gpt-oss's "self_attn.sinks" <-> "attn_sinks.weight", GLM's
// "mlp.gate.e_score_correction_bias" <-> "exp_probs_b.bias"): the whole rest of the name after the layer.
std::optional<std::string> translateParameter(const Family* family, std::string_view layer, std::string_view rest,
                                              bool toHf) {
    if (family == nullptr) return std::nullopt;
    for (const GgufName& n : family->ggufNames) {
        if (!n.parameter) continue;
        const std::string gguf =
            n.ggufPart.empty() ? std::string(n.gguf) : std::string(n.gguf) + "." + std::string(n.ggufPart);
        if (rest != (toHf ? gguf : std::string(n.hf))) continue;
        return std::string(toHf ? kHfLayer : kGgufLayer) + std::string(layer) + "." + (toHf ? std::string(n.hf) : gguf);
    }
    return std::nullopt;
}

// The per-layer module `module` names on the other side: the family's override, else the shared table's.
std::optional<std::string_view> translateModule(const Family* family, std::string_view module, bool toHf) {
    if (family != nullptr)
        for (const GgufName& n : family->ggufNames)
            if (!n.parameter && side(n, toHf) == module) return side(n, !toHf);
    for (const GgufName& n : kPerLayer)
        if (side(n, toHf) == module) {
            // A module the family renames is not also reached under its shared name (gemma3's ffn_norm is
            // pre_feedforward_layernorm, so post_attention_layernorm is its post_attention_norm only).
            if (family != nullptr)
                for (const GgufName& o : family->ggufNames)
                    if (!o.parameter && side(o, !toHf) == side(n, !toHf)) return std::nullopt;
            return side(n, !toHf);
        }
    return std::nullopt;
}

std::optional<std::string> translate(const Family* family, std::string_view name, bool toHf) {
    const std::string_view layerFrom = toHf ? kGgufLayer : kHfLayer, layerTo = toHf ? kHfLayer : kGgufLayer;
    if (name.starts_with(layerFrom))
        if (const auto layer = splitLayer(name.substr(layerFrom.size())))
            if (auto parameter = translateParameter(family, layer->first, layer->second, toHf)) return parameter;
    const auto split = splitPart(name);
    if (!split) return std::nullopt;
    const auto [module, part] = *split;
    for (const GgufName& n : kTopLevel)
        if (module == side(n, toHf)) return std::string(side(n, !toHf)) + "." + std::string(part);
    if (!module.starts_with(layerFrom)) return std::nullopt;
    const auto layer = splitLayer(module.substr(layerFrom.size()));
    if (!layer) return std::nullopt;
    const auto to = translateModule(family, layer->second, toHf);
    if (!to) return std::nullopt;
    return std::string(layerTo) + std::string(layer->first) + "." + std::string(*to) + "." + std::string(part);
}

}  // namespace

std::optional<std::string> ggufTensorName(const Family* family, std::string_view hfName) {
    return translate(family, hfName, false);
}

std::optional<std::string> hfTensorName(const Family* family, std::string_view ggufName) {
    return translate(family, ggufName, true);
}

}  // namespace qs::architectures
