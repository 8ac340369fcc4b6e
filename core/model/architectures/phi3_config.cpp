// Phi-3 / Phi-4's own part of the config reader (architectures::ConfigExtra::Phi3; the family: phi3.cpp).
#include <cmath>

#include "config_json.h"

namespace qs::model::detail {

namespace {

std::vector<double> factorList(const nlohmann::json& j, const char* key, std::size_t size, const std::string& source) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_array() || it->size() != size)
        fail(source, std::string("rope_scaling.") + key + " must list " + std::to_string(size) +
                         " numbers (half the rotary dimensions)");
    std::vector<double> out;
    for (const auto& v : *it) {
        if (!v.is_number() || !(v.get<double>() > 0.0))
            fail(source, std::string("rope_scaling.") + key + " holds " + v.dump() + ", not a positive number");
        out.push_back(v.get<double>());
    }
    return out;
}

// LongRoPE as transformers' _compute_longrope_parameters reads it: the short and long factors (one per
// rotary frequency) and the attention factor, by default sqrt(1 + ln(f) / ln(original)) with
// f = max_position_embeddings / original_max_position_embeddings (Phi-3 keeps the original at the top level).
void parseLongRope(const nlohmann::json& top, const nlohmann::json& scaling, ModelConfig& c,
                   const std::string& source) {
    RopeScaling& s = c.ropeScaling;
    const std::size_t half = static_cast<std::size_t>(c.rotaryDims() / 2);
    s.shortFactor = factorList(scaling, "short_factor", half, source);
    s.longFactor = factorList(scaling, "long_factor", half, source);
    double factor = optional<double>(scaling, "factor", 1.0, source);
    int original = optional<int>(scaling, "original_max_position_embeddings", 0, source);
    if (top.contains("original_max_position_embeddings")) {
        original = optional<int>(top, "original_max_position_embeddings", 0, source);
        if (original > 0) factor = static_cast<double>(c.maxPositionEmbeddings) / original;
    }
    if (original <= 0) original = c.maxPositionEmbeddings;
    s.originalMaxPositionEmbeddings = original;
    s.factor = factor;
    const auto given = scaling.find("attention_factor");
    if (given != scaling.end() && !given->is_null()) {
        s.attentionFactor = optional<double>(scaling, "attention_factor", 1.0, source);
        if (!(s.attentionFactor > 0.0)) fail(source, "rope_scaling.attention_factor must be positive");
    } else {
        s.attentionFactor =
            factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(static_cast<double>(original)));
    }
}

}  // namespace

// Phi-3 / Phi-4 (Phi3ForCausalLM): Llama's decoder with q/k/v and gate/up stored fused, an optional
// partial rotary embedding (Phi-4-mini: 0.75 of each head) and LongRoPE; sliding_window as Mistral's.
void readPhi3Config(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
    const auto params = j.find("rope_parameters");
    const bool hasParams = params != j.end() && params->is_object();
    readPartialRotary(j, c, source);
    if (c.ropeScaling.type == RopeScalingType::LongRope) {
        parseLongRope(j, hasParams ? *params : j.at("rope_scaling"), c, source);
    } else if (c.ropeScaling.type != RopeScalingType::None) {
        fail(source, "model_type '" + c.modelType + "' takes default or longrope RoPE only");
    }
}

}  // namespace qs::model::detail
