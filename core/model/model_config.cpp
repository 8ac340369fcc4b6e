#include "qs/model/model_config.h"

#include <set>
#include <type_traits>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/json_value.h"

namespace qs::model {
namespace {

[[noreturn]] void fail(const std::string& source, const std::string& what) {
    throw Error(source + ": " + what);
}

// Sizes the forward pass allocates with: positive and far below what would overflow an index.
constexpr io::IntRange kSizeRange{1, 1 << 24};

int requiredInt(const nlohmann::json& j, const char* key, const std::string& source) {
    const auto v = io::jsonIntegerField(j, key, source, kSizeRange);
    if (!v) fail(source, std::string("missing integer field '") + key + "'");
    return static_cast<int>(*v);
}

template <typename T>
T optional(const nlohmann::json& j, const char* key, T fallback, const std::string& source) {
    if constexpr (std::is_same_v<T, int>) {
        return static_cast<int>(io::jsonIntegerField(j, key, source, {0, 1 << 30}).value_or(fallback));
    } else {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) return fallback;
        try {
            return it->get<T>();
        } catch (const nlohmann::json::exception&) {
            fail(source, std::string("'") + key + "' is " + it->dump() + ", " + io::jsonKind(*it) + " of the wrong type");
        }
    }
}

// Newer transformers releases move rope_theta and the scaling into "rope_parameters"; older ones keep
// "rope_theta" at the top level and the scaling in "rope_scaling".
RopeScaling parseRopeScaling(const nlohmann::json& j, const std::string& source) {
    RopeScaling s;
    if (j.is_null()) return s;
    if (!j.is_object()) fail(source, "rope_scaling is not an object");
    const std::string type = optional<std::string>(j, "rope_type", optional<std::string>(j, "type", "default", source), source);
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
        if (!(s.highFreqFactor > s.lowFreqFactor) || s.originalMaxPositionEmbeddings <= 0)
            fail(source, "rope_scaling llama3 needs high_freq_factor > low_freq_factor and original_max_position_embeddings > 0");
    } else {
        fail(source, "rope scaling '" + type + "' is not supported (only linear and llama3)");
    }
    return s;
}

void parseAttentionVariant(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
    const bool attentionBias = optional<bool>(j, "attention_bias", false, source);
    if (c.modelType == "qwen2") {
        // Qwen2's attention always has q/k/v biases and never an o_proj bias; config does not say so.
        c.qkvBias = true;
        c.outputBias = false;
    } else {
        c.qkvBias = attentionBias;
        c.outputBias = attentionBias;
    }
    c.mlpBias = optional<bool>(j, "mlp_bias", false, source);
    c.qkNorm = c.modelType == "qwen3" || c.modelType == "qwen3_moe";

    if (c.modelType == "mistral" || c.modelType == "mixtral") {
        c.slidingWindow = optional<int>(j, "sliding_window", 0, source);
    } else if (optional<bool>(j, "use_sliding_window", false, source)) {
        // Qwen's per-layer windows (max_window_layers) are not implemented: refuse instead of guessing.
        fail(source, "use_sliding_window is not supported for model_type '" + c.modelType + "'");
    }
}

std::vector<int> layerList(const nlohmann::json& j, const char* key, int numLayers, const std::string& source) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return {};
    if (!it->is_array()) fail(source, std::string("'") + key + "' is " + io::jsonKind(*it) + ", not a list of layer indices");
    std::vector<int> layers;
    for (const auto& v : *it) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= numLayers)
            fail(source, std::string("'") + key + "' holds " + v.dump() + ", not a layer index below num_hidden_layers " +
                             std::to_string(numLayers));
        layers.push_back(v.get<int>());
    }
    return layers;
}

// The sparse MoE block of the two MoE families; each spells the same semantics with its own keys and
// tensor names (the differences of an architecture stay here and in MoeNames).
void parseMoe(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
    MoeConfig& m = c.moe;
    if (c.modelType == "qwen3_moe") {
        m.numExperts = requiredInt(j, "num_experts", source);
        m.expertIntermediateSize = requiredInt(j, "moe_intermediate_size", source);
        m.normTopkProb = optional<bool>(j, "norm_topk_prob", false, source);   // Qwen3MoeConfig's default
        m.sparseStep = optional<int>(j, "decoder_sparse_step", 1, source);
        m.denseLayers = layerList(j, "mlp_only_layers", c.numLayers, source);
        m.names = MoeNames{"mlp", "gate_proj", "up_proj", "down_proj"};
    } else if (c.modelType == "mixtral") {
        m.numExperts = requiredInt(j, "num_local_experts", source);
        m.expertIntermediateSize = c.intermediateSize;
        m.normTopkProb = true;   // MixtralSparseMoeBlock always renormalises the top-k weights
        m.names = MoeNames{"block_sparse_moe", "w1", "w3", "w2"};
    } else {
        return;
    }
    m.numExpertsPerToken = requiredInt(j, "num_experts_per_tok", source);
}

// The MoE families users ask for whose forward pass needs more than the Qwen3-MoE / Mixtral block:
// what is missing, so that the refusal says it instead of only "not supported".
std::string missingPieces(const std::string& modelType) {
    if (modelType == "deepseek_v3")
        return "its multi-head latent attention (q_lora_rank, kv_lora_rank, the decoupled RoPE head) and its routing "
               "(sigmoid scores with a correction bias, group-limited top-k, routed_scaling_factor, shared experts, "
               "first_k_dense_replace) are not implemented";
    if (modelType == "gpt_oss")
        return "its attention sinks, alternating sliding-window layers, YaRN RoPE, biased router and experts with the "
               "clamped SwiGLU, and the stacked MXFP4 experts are not implemented";
    return "";
}

}  // namespace

bool ModelConfig::isMoeLayer(int layer) const {
    if (!isMoe()) return false;
    for (int dense : moe.denseLayers)
        if (dense == layer) return false;
    return (layer + 1) % moe.sparseStep == 0;
}

ModelConfig ModelConfig::fromJson(const nlohmann::json& j, const std::string& source) {
    if (!j.is_object()) fail(source, "config is not a JSON object");
    static const std::set<std::string> supported{"llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral"};
    ModelConfig c;
    c.modelType = optional<std::string>(j, "model_type", "", source);
    if (const auto missing = missingPieces(c.modelType); !missing.empty())
        fail(source, "model_type '" + c.modelType + "' is not supported yet: " + missing);
    if (!supported.contains(c.modelType))
        fail(source, "model_type '" + c.modelType + "' is not supported (llama, mistral, qwen2, qwen3, qwen3_moe, mixtral)");
    const std::string act = optional<std::string>(j, "hidden_act", "silu", source);
    if (act != "silu") fail(source, "hidden_act '" + act + "' is not supported (only silu)");

    c.hiddenSize = requiredInt(j, "hidden_size", source);
    c.intermediateSize = requiredInt(j, "intermediate_size", source);
    c.numLayers = requiredInt(j, "num_hidden_layers", source);
    c.numHeads = requiredInt(j, "num_attention_heads", source);
    c.numKvHeads = optional<int>(j, "num_key_value_heads", c.numHeads, source);
    c.headDim = optional<int>(j, "head_dim", c.numHeads > 0 ? c.hiddenSize / c.numHeads : 0, source);
    c.vocabSize = requiredInt(j, "vocab_size", source);
    c.maxPositionEmbeddings = optional<int>(j, "max_position_embeddings", 2048, source);
    c.rmsNormEps = optional<double>(j, "rms_norm_eps", 1e-6, source);
    c.tieWordEmbeddings = optional<bool>(j, "tie_word_embeddings", false, source);

    const auto params = j.find("rope_parameters");
    const bool hasParams = params != j.end() && params->is_object();
    c.ropeTheta = hasParams ? optional<double>(*params, "rope_theta", optional<double>(j, "rope_theta", 10000.0, source), source)
                            : optional<double>(j, "rope_theta", 10000.0, source);
    c.ropeScaling = parseRopeScaling(hasParams ? *params : j.value("rope_scaling", nlohmann::json()), source);

    parseAttentionVariant(j, c, source);
    parseMoe(j, c, source);
    c.validate(source);
    return c;
}

void ModelConfig::validate(const std::string& source) const {
    if (hiddenSize <= 0 || intermediateSize <= 0 || numLayers <= 0 || numHeads <= 0 || numKvHeads <= 0 ||
        headDim <= 0 || vocabSize <= 0 || maxPositionEmbeddings <= 0)
        fail(source, "sizes must be positive");
    if (numHeads % numKvHeads != 0) fail(source, "num_attention_heads is not a multiple of num_key_value_heads");
    if (headDim % 2 != 0) fail(source, "head_dim must be even for rotary embeddings");
    if (!(rmsNormEps > 0.0) || !(ropeTheta > 0.0)) fail(source, "rms_norm_eps and rope_theta must be positive");
    if (slidingWindow < 0) fail(source, "sliding_window must not be negative");
    if (moe.numExperts < 0) fail(source, "the number of experts must not be negative");
    if (isMoe()) {
        if (moe.numExpertsPerToken < 1 || moe.numExpertsPerToken > moe.numExperts)
            fail(source, "num_experts_per_tok " + std::to_string(moe.numExpertsPerToken) + " must be between 1 and the " +
                             std::to_string(moe.numExperts) + " experts");
        if (moe.expertIntermediateSize <= 0) fail(source, "the experts' intermediate size must be positive");
        if (moe.sparseStep < 1) fail(source, "decoder_sparse_step must be at least 1");
        if (moe.names.block.empty()) fail(source, "model_type '" + modelType + "' has no MoE tensor names");
    }
}

void ModelConfig::requireDense(const std::string& source, const std::string& what) const {
    if (isMoe())
        fail(source, "model_type '" + modelType + "' is a mixture of experts (" + std::to_string(moe.numExperts) + " experts), and " +
                         what + " does not handle experts yet");
}

ModelConfig ModelConfig::fromCheckpoint(const io::Checkpoint& checkpoint) {
    return fromJson(checkpoint.config(), checkpoint.configSource().string());
}

}  // namespace qs::model
