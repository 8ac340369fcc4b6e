// DeepSeek-V3's and Kimi-K2's own part of the config reader (architectures::ConfigExtra::DeepseekV3; the
// family: deepseek_v3.cpp): the latent attention's sizes (DeepseekV3Config's keys), and what its router
// and attention fix.
#include "qs/model/latent_attention.h"

#include "config_json.h"

namespace qs::model::detail {

namespace {

// q_lora_rank: null (DeepSeek-V2-Lite's q_proj) or a positive rank.
int queryLoraRank(const nlohmann::json& j, const std::string& source) {
    const auto it = j.find("q_lora_rank");
    if (it == j.end() || it->is_null()) return 0;
    const int rank = requiredInt(j, "q_lora_rank", source);
    if (rank < 1) fail(source, "'q_lora_rank' must be null or positive");
    return rank;
}

// DeepseekV3TopkRouter implements one choice: sigmoid scores, their top-k with the correction bias
// ("noaux_tc"); DeepSeek-V2's softmax and greedy choices are other routers.
void requireNoauxRouter(const nlohmann::json& j, const std::string& source) {
    const std::string method = optional<std::string>(j, "topk_method", "noaux_tc", source);
    if (method != "noaux_tc")
        fail(source, "topk_method '" + method + "' is not supported (only noaux_tc, DeepseekV3TopkRouter's)");
    const std::string scoring = optional<std::string>(j, "scoring_func", "sigmoid", source);
    if (scoring != "sigmoid")
        fail(source, "scoring_func '" + scoring + "' is not supported (only sigmoid, DeepseekV3TopkRouter's)");
}

}  // namespace

void readDeepseekV3Config(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
    LatentAttention& a = c.mla;
    a.qLoraRank = queryLoraRank(j, source);
    a.kvLoraRank = requiredInt(j, "kv_lora_rank", source);
    a.qkNopeHeadDim = requiredInt(j, "qk_nope_head_dim", source);
    a.qkRopeHeadDim = requiredInt(j, "qk_rope_head_dim", source);
    a.vHeadDim = requiredInt(j, "v_head_dim", source);
    a.ropeInterleave = optional<bool>(j, "rope_interleave", true, source);
    if (a.qkRopeHeadDim % 2 != 0) fail(source, "'qk_rope_head_dim' must be even for rotary embeddings");
    // Each value head is padded to the query width inside attention (latent_attention.cpp).
    if (a.vHeadDim > a.qkHeadDim())
        fail(source, "v_head_dim " + std::to_string(a.vHeadDim) + " wider than qk_nope_head_dim + qk_rope_head_dim " +
                         std::to_string(a.qkHeadDim()) + " is not supported");
    // kv_b_proj gives every head its own key and value: transformers' repeat_kv only works with as many
    // key/value heads as query heads.
    if (c.numKvHeads != c.numHeads)
        fail(source, "num_key_value_heads " + std::to_string(c.numKvHeads) + " differs from num_attention_heads " +
                         std::to_string(c.numHeads) + ", which the latent attention's per-head keys need");
    c.headDim = a.qkHeadDim();  // the queries' and keys' heads; the values': ModelConfig::valueHeadDim
    c.rotaryDim = 0;
    requireNoauxRouter(j, source);
    if (c.ropeScaling.type == RopeScalingType::Yarn && c.ropeScaling.originalMaxPositionEmbeddings == 0)
        c.ropeScaling.originalMaxPositionEmbeddings = c.maxPositionEmbeddings;
    a.scoreFactor = latentScoreFactor(c.ropeScaling);
}

}  // namespace qs::model::detail
