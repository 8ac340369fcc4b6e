// Reading config.json's fields as transformers does (config_json.h).
#include "config_json.h"

#include <cmath>

#include "qs/architectures/registry.h"
#include "qs/error.h"
#include "qs/model/rope.h"

namespace qs::model::detail {

void fail(const std::string& source, const std::string& what) { throw Error(source + ": " + what); }

void refuseQuoted(const nlohmann::json& j, const char* key, const std::string& source) {
    if (!j.is_object()) return;
    if (const auto it = j.find(key); it != j.end() && it->is_string())
        fail(source, std::string("'") + key + "' is " + it->dump() + ", a string; transformers needs an integer there");
}

int requiredInt(const nlohmann::json& j, const char* key, const std::string& source) {
    refuseQuoted(j, key, source);
    const auto v = io::jsonIntegerField(j, key, source, kSizeRange);
    if (!v) fail(source, std::string("missing integer field '") + key + "'");
    return static_cast<int>(*v);
}

namespace {

// YaRN's attention factor as _compute_yarn_parameters sets it when the config gives none:
// get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim) when both are set (non-zero, DeepSeek's
// keys), else get_mscale(factor).
double yarnAttentionFactor(const RopeScaling& s) {
    if (s.mscale != 0.0 && s.mscaleAllDim != 0.0)
        return yarnMscale(s.factor, s.mscale) / yarnMscale(s.factor, s.mscaleAllDim);
    return yarnMscale(s.factor, 1.0);
}

// YaRN as transformers' _compute_yarn_parameters reads it. original_max_position_embeddings defaults to
// max_position_embeddings, which the caller fills in (fillYarnDefaults) once that is known.
void parseYarn(const nlohmann::json& j, RopeScaling& s, const std::string& source) {
    s.type = RopeScalingType::Yarn;
    s.mscale = optional<double>(j, "mscale", 0.0, source);
    s.mscaleAllDim = optional<double>(j, "mscale_all_dim", 0.0, source);
    if (!(s.mscale >= 0.0) || !(s.mscaleAllDim >= 0.0))
        fail(source, "rope_scaling yarn needs mscale and mscale_all_dim of at least 0");
    // transformers writes `get("beta_fast") or 32`: a 0 falls back to the default too.
    const double betaFast = optional<double>(j, "beta_fast", 0.0, source),
                 betaSlow = optional<double>(j, "beta_slow", 0.0, source);
    s.betaFast = betaFast != 0.0 ? betaFast : 32.0;
    s.betaSlow = betaSlow != 0.0 ? betaSlow : 1.0;
    s.truncate = optional<bool>(j, "truncate", true, source);
    s.originalMaxPositionEmbeddings = optional<int>(j, "original_max_position_embeddings", 0, source);
    s.attentionFactor = optional<double>(j, "attention_factor", yarnAttentionFactor(s), source);
    if (!(s.betaFast > 0.0) || !(s.betaSlow > 0.0) || !(s.attentionFactor > 0.0))
        fail(source, "rope_scaling yarn needs positive beta_fast, beta_slow and attention_factor");
}

}  // namespace

// Newer transformers releases move rope_theta and the scaling into "rope_parameters"; older ones keep
// "rope_theta" at the top level and the scaling in "rope_scaling".
RopeScaling parseRopeScaling(const nlohmann::json& j, const std::string& source) {
    RopeScaling s;
    if (j.is_null()) return s;
    if (!j.is_object()) fail(source, "rope_scaling is not an object");
    if (j.contains("mrope_section") || j.contains("mrope_interleaved")) {
        const std::string towers = architectures::modelTypesWhere(
            [](const architectures::Family& f) { return f.vision && f.vision->multimodalRope; });
        fail(source,
             "rope_scaling holds a multimodal RoPE (mrope_section), read only for the text towers of " + towers);
    }
    const std::string type =
        optional<std::string>(j, "rope_type", optional<std::string>(j, "type", "default", source), source);
    if (type == "default") return s;
    s.factor = optional<double>(j, "factor", 1.0, source);
    if (!(s.factor > 0.0)) fail(source, "rope_scaling.factor must be positive");
    if (type == "linear") {
        s.type = RopeScalingType::Linear;
    } else if (type == "llama3") {
        s.type = RopeScalingType::Llama3;
        s.lowFreqFactor = optional<double>(j, "low_freq_factor", 1.0, source);
        s.highFreqFactor = optional<double>(j, "high_freq_factor", 4.0, source);
        s.originalMaxPositionEmbeddings = optional<int>(j, "original_max_position_embeddings", 8192, source);
        // Llama 4 sets high_freq_factor = low_freq_factor (1): no band between the kept and the slowed
        // frequencies, as transformers computes it (its smoothing is then selected nowhere).
        if (!(s.highFreqFactor >= s.lowFreqFactor) || !(s.lowFreqFactor > 0.0) || s.originalMaxPositionEmbeddings <= 0)
            fail(source,
                 "rope_scaling llama3 needs high_freq_factor >= low_freq_factor > 0 and "
                 "original_max_position_embeddings "
                 "> 0");
    } else if (type == "longrope") {
        s.type =
            RopeScalingType::LongRope;  // the factor lists and the attention factor: parseLongRope (they need the head)
    } else if (type == "yarn") {
        parseYarn(j, s, source);
    } else {
        fail(source, "rope scaling '" + type + "' is not supported (only linear, llama3, longrope and yarn)");
    }
    return s;
}

std::vector<bool> slidingLayersOf(const nlohmann::json& j, int numLayers, const std::string& source) {
    std::vector<bool> sliding;
    const auto types = j.find("layer_types");
    if (types != j.end() && !types->is_null()) {
        if (!types->is_array() || static_cast<int>(types->size()) != numLayers)
            fail(source,
                 "'layer_types' must list one attention type for each of the " + std::to_string(numLayers) + " layers");
        for (const auto& t : *types) {
            const std::string type = t.is_string() ? t.get<std::string>() : t.dump();
            if (type != "sliding_attention" && type != "full_attention")
                fail(source, "'layer_types' holds '" + type + "' (only sliding_attention and full_attention)");
            sliding.push_back(type == "sliding_attention");
        }
        return sliding;
    }
    const int pattern = optional<int>(j, "sliding_window_pattern", 6, source);
    if (pattern < 1) fail(source, "'sliding_window_pattern' must be at least 1");
    for (int i = 0; i < numLayers; ++i) sliding.push_back((i + 1) % pattern != 0);
    return sliding;
}

void readPartialRotary(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
    const auto params = j.find("rope_parameters");
    const bool hasParams = params != j.end() && params->is_object();
    // transformers 5 moves partial_rotary_factor into rope_parameters.
    const double partial =
        optional<double>(j, "partial_rotary_factor",
                         hasParams ? optional<double>(*params, "partial_rotary_factor", 1.0, source) : 1.0, source);
    if (!(partial > 0.0 && partial <= 1.0)) fail(source, "partial_rotary_factor must be in (0, 1]");
    const int dims = static_cast<int>(c.headDim * partial);  // int(head_dim * partial_rotary_factor), as transformers
    if (dims < 2 || dims % 2 != 0)
        fail(source, "partial_rotary_factor " + std::to_string(partial) +
                         " leaves an odd or empty rotary part of head_dim " + std::to_string(c.headDim));
    c.rotaryDim = dims == c.headDim ? 0 : dims;
}

}  // namespace qs::model::detail
