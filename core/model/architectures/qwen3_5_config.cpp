// Qwen3.5's and Qwen3.5-MoE's own part of the config reader (architectures::ConfigExtra::Qwen35; the family:
// qwen3_5.cpp): which layers are Gated DeltaNet linear attention (layer_types, else every
// full_attention_interval-th layer is full), the linear attention's sizes (Qwen3_5TextConfig's keys and
// defaults), the full attention's output gate, (1 + w) norms and partial_rotary_factor's default of 0.25.
#include "config_json.h"

namespace qs::model::detail {

namespace {

std::vector<bool> linearLayersOf(const nlohmann::json& j, int numLayers, const std::string& source) {
    std::vector<bool> linear;
    const auto types = j.find("layer_types");
    if (types != j.end() && !types->is_null()) {
        if (!types->is_array() || static_cast<int>(types->size()) != numLayers)
            fail(source,
                 "'layer_types' must list one layer type for each of the " + std::to_string(numLayers) + " layers");
        for (const auto& t : *types) {
            const std::string type = t.is_string() ? t.get<std::string>() : t.dump();
            if (type != "linear_attention" && type != "full_attention")
                fail(source, "'layer_types' holds '" + type + "' (only linear_attention and full_attention)");
            linear.push_back(type == "linear_attention");
        }
        return linear;
    }
    const int interval = optional<int>(j, "full_attention_interval", 4, source);
    if (interval < 1) fail(source, "'full_attention_interval' must be at least 1");
    for (int i = 0; i < numLayers; ++i) linear.push_back((i + 1) % interval != 0);
    return linear;
}

bool hasPartialRotary(const nlohmann::json& j) {
    if (j.contains("partial_rotary_factor")) return true;
    const auto params = j.find("rope_parameters");
    return params != j.end() && params->is_object() && params->contains("partial_rotary_factor");
}

}  // namespace

void readQwen35Config(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
    LinearAttentionConfig& la = c.linearAttention;
    la.layers = linearLayersOf(j, c.numLayers, source);
    la.numKeyHeads = optional<int>(j, "linear_num_key_heads", 16, source);
    la.numValueHeads = optional<int>(j, "linear_num_value_heads", 32, source);
    la.keyHeadDim = optional<int>(j, "linear_key_head_dim", 128, source);
    la.valueHeadDim = optional<int>(j, "linear_value_head_dim", 128, source);
    la.convKernel = optional<int>(j, "linear_conv_kernel_dim", 4, source);
    if (la.numKeyHeads < 1 || la.numValueHeads < 1 || la.numValueHeads % la.numKeyHeads != 0)
        fail(source, "linear_num_value_heads " + std::to_string(la.numValueHeads) +
                         " must be a positive multiple of linear_num_key_heads " + std::to_string(la.numKeyHeads));
    if (la.keyHeadDim < 1 || la.valueHeadDim < 1 || la.convKernel < 1)
        fail(source, "linear_key_head_dim, linear_value_head_dim and linear_conv_kernel_dim must be positive");
    c.attentionOutputGate = true;
    c.arch.normOffset = 1.0f;  // Qwen3_5RMSNorm: x · (1 + w); the DeltaNet's gated norm: x · w
    // The multi-token-prediction layers beside the decoder are copied through (a VLM's tower layout names
    // them again, with its vision tower).
    c.arch.passThroughPrefixes = {"mtp."};
    if (!hasPartialRotary(j)) {  // Qwen3_5TextConfig's default
        const int dims = static_cast<int>(c.headDim * 0.25);
        if (dims < 2 || dims % 2 != 0) fail(source, "a quarter of head_dim is no even rotary part");
        c.rotaryDim = dims;
    }
}

}  // namespace qs::model::detail
