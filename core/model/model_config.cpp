#include "qs/model/model_config.h"

#include <cmath>
#include <set>
#include <type_traits>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/dtype.h"
#include "qs/io/json_value.h"

namespace qs::model {
namespace {

[[noreturn]] void fail(const std::string& source, const std::string& what) { throw Error(source + ": " + what); }

// Sizes the forward pass allocates with: positive and far below what would overflow an index.
constexpr io::IntRange kSizeRange{1, 1 << 24};

// transformers keeps a config's values as the JSON has them: a quoted size ("256") reaches nn.Linear
// or range() as a string and fails there, so it is refused here rather than read as a number (a
// quantization config's quoted numbers are read: their consumers convert them).
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

template <typename T>
T optional(const nlohmann::json& j, const char* key, T fallback, const std::string& source) {
    if constexpr (std::is_same_v<T, int>) {
        refuseQuoted(j, key, source);
        return static_cast<int>(io::jsonIntegerField(j, key, source, {0, 1 << 30}).value_or(fallback));
    } else {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) return fallback;
        try {
            return it->get<T>();
        } catch (const nlohmann::json::exception&) {
            fail(source,
                 std::string("'") + key + "' is " + it->dump() + ", " + io::jsonKind(*it) + " of the wrong type");
        }
    }
}

// YaRN as transformers' _compute_yarn_parameters reads it. original_max_position_embeddings defaults to
// max_position_embeddings, which the caller fills in (fillYarnDefaults) once that is known.
void parseYarn(const nlohmann::json& j, RopeScaling& s, const std::string& source) {
    s.type = RopeScalingType::Yarn;
    for (const char* key : {"mscale", "mscale_all_dim"}) {
        const auto it = j.find(key);
        if (it != j.end() && !it->is_null())
            fail(source, std::string("rope_scaling yarn '") + key + "' is not supported");
    }
    // transformers writes `get("beta_fast") or 32`: a 0 falls back to the default too.
    const double betaFast = optional<double>(j, "beta_fast", 0.0, source),
                 betaSlow = optional<double>(j, "beta_slow", 0.0, source);
    s.betaFast = betaFast != 0.0 ? betaFast : 32.0;
    s.betaSlow = betaSlow != 0.0 ? betaSlow : 1.0;
    s.truncate = optional<bool>(j, "truncate", true, source);
    s.originalMaxPositionEmbeddings = optional<int>(j, "original_max_position_embeddings", 0, source);
    s.attentionFactor =
        optional<double>(j, "attention_factor", s.factor <= 1.0 ? 1.0 : 0.1 * std::log(s.factor) + 1.0, source);
    if (!(s.betaFast > 0.0) || !(s.betaSlow > 0.0) || !(s.attentionFactor > 0.0))
        fail(source, "rope_scaling yarn needs positive beta_fast, beta_slow and attention_factor");
}

// Newer transformers releases move rope_theta and the scaling into "rope_parameters"; older ones keep
// "rope_theta" at the top level and the scaling in "rope_scaling".
RopeScaling parseRopeScaling(const nlohmann::json& j, const std::string& source) {
    RopeScaling s;
    if (j.is_null()) return s;
    if (!j.is_object()) fail(source, "rope_scaling is not an object");
    if (j.contains("mrope_section") || j.contains("mrope_interleaved"))
        fail(source,
             "rope_scaling holds a multimodal RoPE (mrope_section), read only for the text towers of qwen2_5_vl and "
             "qwen3_vl");
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
        if (!(s.highFreqFactor > s.lowFreqFactor) || s.originalMaxPositionEmbeddings <= 0)
            fail(source,
                 "rope_scaling llama3 needs high_freq_factor > low_freq_factor and original_max_position_embeddings > "
                 "0");
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

// Phi-3 / Phi-4 (Phi3ForCausalLM): Llama's decoder with q/k/v and gate/up stored fused, an optional
// partial rotary embedding (Phi-4-mini: 0.75 of each head) and LongRoPE; sliding_window as Mistral's.
void parsePhi3(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
    c.arch.fusedQkv = "self_attn.qkv_proj";
    c.arch.fusedGateUp = "mlp.gate_up_proj";
    c.slidingWindow = optional<int>(j, "sliding_window", 0, source);
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
    if (c.ropeScaling.type == RopeScalingType::LongRope) {
        parseLongRope(j, hasParams ? *params : j.at("rope_scaling"), c, source);
    } else if (c.ropeScaling.type != RopeScalingType::None) {
        fail(source, "model_type 'phi3' takes default or longrope RoPE only");
    }
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

    if (c.modelType == "gemma3_text") {
        return;  // parseGemma3Text: per-layer windows
    } else if (c.modelType == "phi3") {
        return;  // parsePhi3
    } else if (c.modelType == "mistral" || c.modelType == "mixtral") {
        c.slidingWindow = optional<int>(j, "sliding_window", 0, source);
    } else if (optional<bool>(j, "use_sliding_window", false, source)) {
        // Qwen's per-layer windows (max_window_layers) are not implemented: refuse instead of guessing.
        fail(source, "use_sliding_window is not supported for model_type '" + c.modelType + "'");
    }
}

std::vector<int> layerList(const nlohmann::json& j, const char* key, int numLayers, const std::string& source) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return {};
    if (!it->is_array())
        fail(source, std::string("'") + key + "' is " + io::jsonKind(*it) + ", not a list of layer indices");
    std::vector<int> layers;
    for (const auto& v : *it) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= numLayers)
            fail(source, std::string("'") + key + "' holds " + v.dump() +
                             ", not a layer index below num_hidden_layers " + std::to_string(numLayers));
        layers.push_back(v.get<int>());
    }
    return layers;
}

// The sparse MoE block of the MoE families; each spells the same semantics with its own keys and
// tensor names (the differences of an architecture stay here and in MoeNames).
void parseMoe(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
    MoeConfig& m = c.moe;
    if (c.modelType == "qwen3_moe") {
        m.numExperts = requiredInt(j, "num_experts", source);
        m.expertIntermediateSize = requiredInt(j, "moe_intermediate_size", source);
        m.normTopkProb = optional<bool>(j, "norm_topk_prob", false, source);  // Qwen3MoeConfig's default
        m.sparseStep = optional<int>(j, "decoder_sparse_step", 1, source);
        m.denseLayers = layerList(j, "mlp_only_layers", c.numLayers, source);
        m.names = MoeNames{"mlp", "gate_proj", "up_proj", "down_proj"};
    } else if (c.modelType == "mixtral") {
        m.numExperts = requiredInt(j, "num_local_experts", source);
        m.expertIntermediateSize = c.intermediateSize;
        m.normTopkProb = true;  // MixtralSparseMoeBlock always renormalises the top-k weights
        m.names = MoeNames{"block_sparse_moe", "w1", "w3", "w2"};
    } else if (c.modelType == "gpt_oss") {
        // GptOssTopKRouter: top-k of the biased router logits, softmax over those k (the same weights as a
        // softmax over all experts renormalised over the top k).
        m.numExperts = requiredInt(j, "num_local_experts", source);
        m.expertIntermediateSize = c.intermediateSize;
        m.normTopkProb = true;
        m.names = MoeNames{"mlp", "gate_up_proj", "", "down_proj", "router"};
        m.activation = ExpertActivation::ClampedSwiglu;
        m.swigluLimit = static_cast<float>(optional<double>(j, "swiglu_limit", 7.0, source));
        if (!(m.swigluLimit > 0.0f)) fail(source, "'swiglu_limit' must be positive");
        m.stackedExperts = true;
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
    if (modelType == "qwen3_vl_moe")
        return "its text tower's experts are stored stacked (mlp.experts.gate_up_proj, mlp.experts.down_proj: one "
               "tensor for all "
               "experts), which is not read yet; the dense qwen3_vl is supported";
    return "";
}

// sqrt(hidden_size) as Gemma3TextScaledWordEmbedding applies it: rounded to the embedding's dtype.
double embeddingScaleIn(io::DType dtype, int hiddenSize) {
    const float scale = static_cast<float>(std::sqrt(static_cast<double>(hiddenSize)));
    if (dtype == io::DType::BF16) return io::bf16ToF32(io::f32ToBf16(scale));
    if (dtype == io::DType::F16) return io::f16ToF32(io::f32ToF16(scale));
    return scale;
}

io::DType configDtype(const nlohmann::json& j, const std::string& source) {
    const std::string name =
        optional<std::string>(j, "dtype", optional<std::string>(j, "torch_dtype", "float32", source), source);
    if (name == "bfloat16") return io::DType::BF16;
    if (name == "float16") return io::DType::F16;
    return io::DType::F32;
}

// Gemma 3's layer_types (or the older sliding_window_pattern: every pattern-th layer is global).
std::vector<bool> gemmaSlidingLayers(const nlohmann::json& j, int numLayers, const std::string& source) {
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

// gpt-oss (GptOssConfig's keys and defaults): biased attention with per-head sinks, alternating sliding /
// full layers (layer_types), YaRN RoPE, and the biased router and experts of parseMoe.
void parseGptOss(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
    c.qkvBias = c.outputBias = optional<bool>(j, "attention_bias", true, source);
    c.arch.attentionSinks = true;
    c.headDim = optional<int>(j, "head_dim", 64, source);
    c.slidingWindow = optional<int>(j, "sliding_window", 128, source);
    const auto types = j.find("layer_types");
    if (types != j.end() && !types->is_null()) {
        c.slidingLayers = gemmaSlidingLayers(j, c.numLayers, source);
    } else {
        for (int i = 0; i < c.numLayers; ++i) c.slidingLayers.push_back(i % 2 == 0);  // GptOssConfig's default
    }
    if (c.ropeScaling.type == RopeScalingType::Yarn && c.ropeScaling.originalMaxPositionEmbeddings == 0)
        c.ropeScaling.originalMaxPositionEmbeddings = c.maxPositionEmbeddings;
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

// Gemma 3's decoder (Gemma3TextConfig's keys and defaults): the (1 + w) norms, sandwich norms, q/k norms,
// gelu-tanh MLP, scaled embeddings, query_pre_attn_scalar and alternating sliding / global layers.
void parseGemma3Text(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
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
    c.slidingLayers = gemmaSlidingLayers(j, c.numLayers, source);
    c.embeddingScale = embeddingScaleIn(configDtype(j, source), c.hiddenSize);
    parseGemmaRope(j, c, source);
}

// Where a VLM's text tower lives, in the layout current transformers writes (>= 4.52: the decoder under
// model.language_model.) and in the layout of the checkpoints written before it, which are still most of
// what is published. Names checked against transformers' _checkpoint_conversion_mapping, which maps the
// old layout onto the new one:
//   Gemma3 / Mistral3ForConditionalGeneration: ^language_model.model -> model.language_model,
//     ^vision_tower -> model.vision_tower, ^multi_modal_projector -> model.multi_modal_projector,
//     ^language_model.lm_head -> lm_head;
//   Qwen2.5-VL / Qwen3-VL ForConditionalGeneration: ^visual -> model.visual,
//     ^model(?!.(language_model|visual)) -> model.language_model (lm_head.weight in both).
struct TowerLayout {
    std::string tensorPrefix;
    std::string lmHead;
    std::vector<std::string> passThroughPrefixes;
};

// A vision-language model whose text tower is a decoder we run: the text model_type its config is read
// as, the model_types transformers writes in text_config, and the two tensor layouts.
struct VlmTower {
    std::string modelType;
    std::string textModelType;
    std::set<std::string> textConfigTypes;  // text_config.model_type values read as textModelType
    bool textConfigRequired;                // else the text fields may sit at the top level (Qwen2.5-VL before 4.52)
    bool multimodalRope;                    // rope_scaling may hold mrope_section / mrope_interleaved
    TowerLayout current;
    TowerLayout old;
};

const std::vector<VlmTower>& vlmTowers() {
    static const std::vector<VlmTower> towers{
        {"gemma3",
         "gemma3_text",
         {"gemma3_text"},
         true,
         false,
         {"model.language_model.", "lm_head.weight", {"model.vision_tower.", "model.multi_modal_projector."}},
         {"language_model.model.", "language_model.lm_head.weight", {"vision_tower.", "multi_modal_projector."}}},
        {"qwen2_5_vl",
         "qwen2",
         {"qwen2_5_vl_text", "qwen2_5_vl"},
         false,
         true,
         {"model.language_model.", "lm_head.weight", {"model.visual."}},
         {"model.", "lm_head.weight", {"visual."}}},
        {"qwen3_vl",
         "qwen3",
         {"qwen3_vl_text", "qwen3_vl"},
         true,
         true,
         {"model.language_model.", "lm_head.weight", {"model.visual."}},
         {"model.", "lm_head.weight", {"visual."}}},
        {"mistral3",
         "mistral",
         {"mistral"},
         true,
         false,
         {"model.language_model.", "lm_head.weight", {"model.vision_tower.", "model.multi_modal_projector."}},
         {"language_model.model.", "language_model.lm_head.weight", {"vision_tower.", "multi_modal_projector."}}},
    };
    return towers;
}

const VlmTower* vlmTowerOf(const std::string& modelType) {
    for (const VlmTower& t : vlmTowers())
        if (t.modelType == modelType) return &t;
    return nullptr;
}

void applyLayout(const TowerLayout& layout, Architecture& arch) {
    arch.tensorPrefix = layout.tensorPrefix;
    arch.lmHead = layout.lmHead;
    arch.passThroughPrefixes = layout.passThroughPrefixes;
}

// The text config of a VLM as a config of its text model_type: text_config (or, where the family
// allowed it, the top level) with the keys a VLM gives only at the top copied in.
nlohmann::json towerTextConfig(const VlmTower& tower, const nlohmann::json& j, const std::string& source) {
    const auto text = j.find("text_config");
    const bool hasText = text != j.end() && text->is_object();
    if (!hasText && tower.textConfigRequired)
        fail(source, "model_type '" + tower.modelType + "' needs a 'text_config' object");
    nlohmann::json t = hasText ? *text : j;
    if (hasText) {
        const std::string type = optional<std::string>(t, "model_type", tower.textModelType, source);
        if (!tower.textConfigTypes.contains(type) && type != tower.textModelType)
            fail(source, "text_config.model_type '" + type + "' is not the " + tower.textModelType + " text tower a '" +
                             tower.modelType + "' model is read as");
        // The VLM ties its lm_head to the text tower's embedding; the dtype may be given only at the top.
        for (const char* key : {"tie_word_embeddings", "torch_dtype", "dtype"})
            if (!t.contains(key) && j.contains(key)) t[key] = j[key];
    }
    t["model_type"] = tower.textModelType;
    return t;
}

std::vector<int> mropeSectionOf(const nlohmann::json& rope, const std::string& source) {
    const auto it = rope.find("mrope_section");
    if (it == rope.end() || it->is_null()) return {};
    if (!it->is_array() || it->size() != 3)
        fail(source, "rope_scaling.mrope_section must list three sizes (temporal, height, width)");
    std::vector<int> sections;
    for (const auto& v : *it) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > (1 << 16))
            fail(source, "rope_scaling.mrope_section holds " + v.dump() + ", not a size");
        sections.push_back(v.get<int>());
    }
    return sections;
}

// Qwen-VL's multimodal RoPE read and taken out of the text config's rope_scaling / rope_parameters, so
// that the text model_type reads what is left as the plain RoPE it is for text: HF's multimodal rotary
// (Qwen2_5_VLRotaryEmbedding + apply_multimodal_rotary_pos_emb, Qwen3-VL's apply_interleaved_mrope)
// computes the angles of each frequency from one of the temporal / height / width position ids, chosen
// by mrope_section (in blocks, or interleaved); get_rope_index gives a text token three equal ids (its
// position), so every frequency sees the same position and the rotation is the 1-D RoPE of rope_theta.
// Old configs spell the type "mrope", which Qwen2_5_VLConfig itself rewrites to "default".
void takeMultimodalRope(nlohmann::json& text, ModelConfig& c, const std::string& source) {
    for (const char* key : {"rope_scaling", "rope_parameters"}) {
        const auto it = text.find(key);
        if (it == text.end() || !it->is_object()) continue;
        nlohmann::json& rope = *it;
        for (const char* typeKey : {"rope_type", "type"})
            if (rope.contains(typeKey) && rope[typeKey] == "mrope") rope[typeKey] = "default";
        if (const auto sections = mropeSectionOf(rope, source); !sections.empty()) c.mropeSection = sections;
        c.mropeInterleaved = optional<bool>(rope, "mrope_interleaved", c.mropeInterleaved, source);
        rope.erase("mrope_section");
        rope.erase("mrope_interleaved");
    }
}

ModelConfig towerFromJson(const VlmTower& tower, const nlohmann::json& j, const std::string& source) {
    nlohmann::json text = towerTextConfig(tower, j, source);
    const std::string textSource = text.is_object() && j.contains("text_config") ? source + " text_config" : source;
    ModelConfig mrope;
    if (tower.multimodalRope) takeMultimodalRope(text, mrope, textSource);
    ModelConfig c = ModelConfig::fromJson(text, textSource);
    c.modelType = tower.modelType;
    applyLayout(tower.current, c.arch);
    c.mropeSection = mrope.mropeSection;
    c.mropeInterleaved = mrope.mropeInterleaved;
    if (!c.mropeSection.empty()) {
        int sum = 0;
        for (int s : c.mropeSection) sum += s;
        if (sum != c.headDim / 2)
            fail(textSource, "rope_scaling.mrope_section sums to " + std::to_string(sum) +
                                 ", not head_dim / 2 = " + std::to_string(c.headDim / 2));
    }
    // Qwen3-VL adds vision features into its first decoder layers at the image tokens only (deepstack):
    // nothing for text; counted for llama.cpp's qwen3vl, whose converter writes it.
    const nlohmann::json vision = j.value("vision_config", nlohmann::json::object());
    if (vision.is_object() && vision.contains("deepstack_visual_indexes") &&
        vision["deepstack_visual_indexes"].is_array())
        c.deepstackLayers = static_cast<int>(vision["deepstack_visual_indexes"].size());
    return c;
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
    static const std::set<std::string> supported{"llama",   "mistral", "qwen2",       "qwen3", "qwen3_moe",
                                                 "mixtral", "gpt_oss", "gemma3_text", "phi3"};
    ModelConfig c;
    c.modelType = optional<std::string>(j, "model_type", "", source);
    if (const auto missing = missingPieces(c.modelType); !missing.empty())
        fail(source, "model_type '" + c.modelType + "' is not supported yet: " + missing);
    if (const VlmTower* tower = vlmTowerOf(c.modelType)) return towerFromJson(*tower, j, source);
    if (!supported.contains(c.modelType))
        fail(source, "model_type '" + c.modelType +
                         "' is not supported (llama, mistral, qwen2, qwen3, qwen3_moe, mixtral, gpt_oss, gemma3_text, "
                         "phi3; the text towers of gemma3, "
                         "qwen2_5_vl, qwen3_vl, mistral3)");
    const bool gemma = c.modelType == "gemma3_text";
    const std::string act = optional<std::string>(j, "hidden_act", "silu", source);
    if (!gemma && act != "silu") fail(source, "hidden_act '" + act + "' is not supported (only silu)");

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
    c.ropeTheta =
        hasParams ? optional<double>(*params, "rope_theta", optional<double>(j, "rope_theta", 10000.0, source), source)
                  : optional<double>(j, "rope_theta", 10000.0, source);
    c.ropeScaling = parseRopeScaling(hasParams ? *params : j.value("rope_scaling", nlohmann::json()), source);

    parseAttentionVariant(j, c, source);
    parseMoe(j, c, source);
    if (gemma) parseGemma3Text(j, c, source);
    if (c.modelType == "phi3")
        parsePhi3(j, c, source);
    else if (c.ropeScaling.type == RopeScalingType::LongRope)
        fail(source, "longrope is supported for model_type 'phi3' only");
    if (c.modelType == "gpt_oss") parseGptOss(j, c, source);
    // YaRN is checked against transformers and llama.cpp for gpt-oss only: elsewhere it is refused, not guessed.
    if (c.ropeScaling.type == RopeScalingType::Yarn && c.modelType != "gpt_oss")
        fail(source, "rope scaling 'yarn' is not supported for model_type '" + c.modelType + "' (only for gpt_oss)");
    c.validate(source);
    return c;
}

void ModelConfig::validate(const std::string& source) const {
    if (hiddenSize <= 0 || intermediateSize <= 0 || numLayers <= 0 || numHeads <= 0 || numKvHeads <= 0 ||
        headDim <= 0 || vocabSize <= 0 || maxPositionEmbeddings <= 0)
        fail(source, "sizes must be positive");
    if (numHeads % numKvHeads != 0) fail(source, "num_attention_heads is not a multiple of num_key_value_heads");
    if (headDim % 2 != 0) fail(source, "head_dim must be even for rotary embeddings");
    if (rotaryDim < 0 || rotaryDim > headDim || rotaryDim % 2 != 0)
        fail(source, "the rotary part of a head must be even and at most head_dim");
    if (ropeScaling.type == RopeScalingType::LongRope &&
        (ropeScaling.shortFactor.size() != std::size_t(rotaryDims() / 2) ||
         ropeScaling.longFactor.size() != std::size_t(rotaryDims() / 2)))
        fail(source, "longrope needs one short and one long factor per rotary frequency");
    if (!(rmsNormEps > 0.0) || !(ropeTheta > 0.0)) fail(source, "rms_norm_eps and rope_theta must be positive");
    if (slidingWindow < 0) fail(source, "sliding_window must not be negative");
    if (!slidingLayers.empty() && static_cast<int>(slidingLayers.size()) != numLayers)
        fail(source, "the per-layer attention types do not cover the " + std::to_string(numLayers) + " layers");
    if (queryPreAttnScalar < 0.0 || ropeLocalTheta < 0.0)
        fail(source, "query_pre_attn_scalar and the local RoPE base must not be negative");
    if (moe.numExperts < 0) fail(source, "the number of experts must not be negative");
    if (isMoe()) {
        if (moe.numExpertsPerToken < 1 || moe.numExpertsPerToken > moe.numExperts)
            fail(source, "num_experts_per_tok " + std::to_string(moe.numExpertsPerToken) +
                             " must be between 1 and the " + std::to_string(moe.numExperts) + " experts");
        if (moe.expertIntermediateSize <= 0) fail(source, "the experts' intermediate size must be positive");
        if (moe.sparseStep < 1) fail(source, "decoder_sparse_step must be at least 1");
        if (moe.names.block.empty()) fail(source, "model_type '" + modelType + "' has no MoE tensor names");
    }
}

void ModelConfig::requireDense(const std::string& source, const std::string& what) const {
    if (isMoe())
        fail(source, "model_type '" + modelType + "' is a mixture of experts (" + std::to_string(moe.numExperts) +
                         " experts), and " + what + " does not handle experts yet");
}

std::vector<std::pair<std::string, std::vector<std::string>>> fusedModules(const Architecture& arch) {
    std::vector<std::pair<std::string, std::vector<std::string>>> out;
    if (!arch.fusedQkv.empty())
        out.push_back({arch.fusedQkv, {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}});
    if (!arch.fusedGateUp.empty()) out.push_back({arch.fusedGateUp, {"mlp.gate_proj", "mlp.up_proj"}});
    return out;
}

std::vector<FusedProjection> ModelConfig::fusedProjections() const {
    const auto rowsOf = [this](const std::string& module) {
        return module == "self_attn.q_proj" ? qDim() : module.starts_with("self_attn.") ? kvDim() : intermediateSize;
    };
    std::vector<FusedProjection> out;
    for (const auto& [fused, parts] : fusedModules(arch)) {
        FusedProjection f{fused, {}};
        for (const std::string& part : parts) f.parts.emplace_back(part, rowsOf(part));
        out.push_back(std::move(f));
    }
    return out;
}

int ModelConfig::windowOf(int layer) const {
    if (slidingLayers.empty()) return slidingWindow;
    return slidingLayers.at(static_cast<std::size_t>(layer)) ? slidingWindow : 0;
}

bool ModelConfig::usesLocalRope(int layer) const {
    return ropeLocalTheta > 0.0 && !slidingLayers.empty() && slidingLayers.at(static_cast<std::size_t>(layer));
}

ModelConfig ModelConfig::fromCheckpoint(const io::Checkpoint& checkpoint) {
    ModelConfig c = fromJson(checkpoint.config(), checkpoint.configSource().string());
    // llama.cpp's gpt-oss keeps each expert's gate and up apart (ffn_gate_exps, ffn_up_exps, with their
    // biases), where the checkpoint interleaves them in one stacked gate_up_proj: a GGUF reads back one
    // gate_proj, up_proj and down_proj per expert (io's GGUF names), and the clamped SwiGLU takes them apart.
    if (checkpoint.gguf() != nullptr && c.modelType == "gpt_oss") {
        c.moe.names = MoeNames{"mlp", "gate_proj", "up_proj", "down_proj", "router"};
        c.moe.stackedExperts = false;
    }
    // A VLM written before transformers 4.52 keeps its text tower in the old layout (TowerLayout).
    if (const VlmTower* tower = vlmTowerOf(c.modelType))
        if (!checkpoint.find(c.arch.tensorPrefix + "embed_tokens.weight") &&
            checkpoint.find(tower->old.tensorPrefix + "embed_tokens.weight"))
            applyLayout(tower->old, c.arch);
    // Gemma scales the embedding in the embedding tensor's own dtype.
    if (c.embeddingScale != 1.0)
        if (const io::CheckpointTensor* e = checkpoint.find(c.arch.tensorPrefix + "embed_tokens.weight"))
            c.embeddingScale = embeddingScaleIn(e->info->dtype, c.hiddenSize);
    return c;
}

}  // namespace qs::model
