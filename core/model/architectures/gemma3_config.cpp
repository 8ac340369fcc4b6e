// Gemma 3's own part of the config reader (architectures::ConfigExtra::Gemma3; the family: gemma3.cpp).
#include <cmath>

#include "config_json.h"

namespace qs::model::detail {

namespace {

io::DType configDtype(const nlohmann::json& j, const std::string& source) {
    const std::string name =
        optional<std::string>(j, "dtype", optional<std::string>(j, "torch_dtype", "float32", source), source);
    if (name == "bfloat16") return io::DType::BF16;
    if (name == "float16") return io::DType::F16;
    return io::DType::F32;
}

// Gemma 3's RoPE: rope_theta with rope_scaling on the global layers, rope_local_base_freq unscaled on the
// sliding ones; transformers 5 writes both under rope_parameters, keyed by layer type.
void parseGemmaRope(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
    const auto params = j.find("rope_parameters");
    if (params != j.end() && params->is_object() && params->contains("full_attention")) {
        const nlohmann::json& full = (*params)["full_attention"];
        c.ropeTheta = optional<double>(full, "rope_theta", 1'000'000.0, source);
        c.ropeScaling = parseRopeScaling(full, source);
        const nlohmann::json local = params->value("sliding_attention", nlohmann::json::object());
        c.ropeLocalTheta = optional<double>(local, "rope_theta", 10'000.0, source);
        if (parseRopeScaling(local, source).type != RopeScalingType::None)
            fail(source, "rope_parameters.sliding_attention: a scaled local RoPE is not supported");
        return;
    }
    c.ropeTheta = optional<double>(j, "rope_theta", 1'000'000.0, source);
    c.ropeScaling = parseRopeScaling(j.value("rope_scaling", nlohmann::json()), source);
    c.ropeLocalTheta = optional<double>(j, "rope_local_base_freq", 10'000.0, source);
}

}  // namespace

double embeddingScaleIn(io::DType dtype, int hiddenSize) {
    const float scale = static_cast<float>(std::sqrt(static_cast<double>(hiddenSize)));
    if (dtype == io::DType::BF16) return io::bf16ToF32(io::f32ToBf16(scale));
    if (dtype == io::DType::F16) return io::f16ToF32(io::f32ToF16(scale));
    return scale;
}

// Gemma 3's decoder (Gemma3TextConfig's keys and defaults): the (1 + w) norms, sandwich norms, q/k norms,
// gelu-tanh MLP, scaled embeddings, query_pre_attn_scalar and alternating sliding / global layers.
void readGemma3Config(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
    for (const char* key : {"final_logit_softcapping", "attn_logit_softcapping"}) {
        const auto it = j.find(key);
        if (it != j.end() && !it->is_null())
            fail(source, std::string("'") + key + "' is " + it->dump() + ": logit soft-capping is not supported");
    }
    if (optional<bool>(j, "use_bidirectional_attention", false, source))
        fail(source, "'use_bidirectional_attention' is true: only causal attention is supported");
    const std::string act = optional<std::string>(
        j, "hidden_activation", optional<std::string>(j, "hidden_act", "gelu_pytorch_tanh", source), source);
    if (act != "gelu_pytorch_tanh")
        fail(source, "hidden_activation '" + act + "' is not supported (only gelu_pytorch_tanh)");
    c.arch.activation = Activation::GeluTanh;
    c.arch.normOffset = 1.0f;
    c.arch.preMlpNorm = "pre_feedforward_layernorm";
    c.arch.attentionOutputNorm = "post_attention_layernorm";
    c.arch.mlpOutputNorm = "post_feedforward_layernorm";
    c.qkNorm = true;
    c.headDim = optional<int>(j, "head_dim", 256, source);
    c.maxPositionEmbeddings = optional<int>(j, "max_position_embeddings", 131072, source);
    c.tieWordEmbeddings = optional<bool>(j, "tie_word_embeddings", true, source);
    c.queryPreAttnScalar = optional<double>(j, "query_pre_attn_scalar", 256.0, source);
    if (!(c.queryPreAttnScalar > 0.0)) fail(source, "'query_pre_attn_scalar' must be positive");
    c.slidingWindow = optional<int>(j, "sliding_window", 4096, source);
    c.slidingLayers = slidingLayersOf(j, c.numLayers, source);
    c.embeddingScale = embeddingScaleIn(configDtype(j, source), c.hiddenSize);
    parseGemmaRope(j, c, source);
}

}  // namespace qs::model::detail
