// gpt-oss's own part of the config reader (architectures::ConfigExtra::GptOss; the family: gpt_oss.cpp).
#include "config_json.h"

namespace qs::model::detail {

// gpt-oss (GptOssConfig's keys and defaults): biased attention with per-head sinks, alternating sliding /
// full layers (layer_types), YaRN RoPE, and the biased router and experts of parseMoe.
void readGptOssConfig(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
    c.arch.attentionSinks = true;
    c.headDim = optional<int>(j, "head_dim", 64, source);
    c.slidingWindow = optional<int>(j, "sliding_window", 128, source);
    const auto types = j.find("layer_types");
    if (types != j.end() && !types->is_null()) {
        c.slidingLayers = slidingLayersOf(j, c.numLayers, source);
    } else {
        for (int i = 0; i < c.numLayers; ++i) c.slidingLayers.push_back(i % 2 == 0);  // GptOssConfig's default
    }
    if (c.ropeScaling.type == RopeScalingType::Yarn && c.ropeScaling.originalMaxPositionEmbeddings == 0)
        c.ropeScaling.originalMaxPositionEmbeddings = c.maxPositionEmbeddings;
}

}  // namespace qs::model::detail
