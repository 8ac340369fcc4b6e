// The architecture keys of a GGUF file from a model config (gguf_model_metadata.h).
#include "gguf_model_metadata.h"

#include <cmath>
#include <numbers>

#include "qs/error.h"
#include "qs/io/gguf_keys.h"

namespace qs::pipeline {

namespace keys = io::gguf_keys;

namespace {

using io::GgufValue;

std::uint32_t u32(int v, const char* what) {
    if (v < 0) throw Error(std::string("GGUF export: ") + what + " " + std::to_string(v) + " is negative");
    return static_cast<std::uint32_t>(v);
}

// GLM's router as llama.cpp's converter writes it: the leading dense layers, the shared expert's width in
// experts, the weights' renormalisation and scale, sigmoid gating and the expert groups.
template <typename Key>
void putSigmoidRouter(io::GgufMetadata& m, const model::ModelConfig& c, const Key& key) {
    const model::MoeConfig& moe = c.moe;
    m.set(key(keys::kLeadingDenseBlockCount), GgufValue::u32(u32(moe.firstDenseLayers, "first_k_dense_replace")));
    m.set(key(keys::kExpertSharedCount),
          GgufValue::u32(u32(moe.sharedExpertIntermediateSize / moe.expertIntermediateSize, "n_shared_experts")));
    m.set(key(keys::kExpertWeightsScale), GgufValue::f32(static_cast<float>(moe.routedScalingFactor)));
    m.set(key(keys::kExpertWeightsNorm), GgufValue::boolean(moe.normTopkProb));
    m.set(key(keys::kExpertGatingFunc), GgufValue::u32(keys::kGatingSigmoid));
    m.set(key(keys::kExpertGroupCount), GgufValue::u32(u32(moe.numGroups, "n_group")));
    m.set(key(keys::kExpertGroupUsedCount), GgufValue::u32(u32(moe.topkGroups, "topk_group")));
}

// DeepSeek's latent attention as llama.cpp's converter writes deepseek2: one MQA head of the latent plus the
// rotary key (key_length kv_lora_rank + rope, value_length kv_lora_rank) that attn_k_b / attn_v_b turn into
// the heads of key_length_mla and value_length_mla; q_lora_rank 0 for q_proj, which llama.cpp then loads.
template <typename Key>
void putLatentAttention(io::GgufMetadata& m, const model::ModelConfig& c, const Key& key) {
    const model::LatentAttention& a = c.mla;
    m.set(key(keys::kHeadCountKv), GgufValue::u32(1));
    m.set(key(keys::kKeyLength), GgufValue::u32(u32(a.kvLoraRank + a.qkRopeHeadDim, "kv_lora_rank")));
    m.set(key(keys::kValueLength), GgufValue::u32(u32(a.kvLoraRank, "kv_lora_rank")));
    m.set(key(keys::kKeyLengthMla), GgufValue::u32(u32(a.qkHeadDim(), "qk_nope_head_dim + qk_rope_head_dim")));
    m.set(key(keys::kValueLengthMla), GgufValue::u32(u32(a.vHeadDim, "v_head_dim")));
    m.set(key(keys::kQLoraRank), GgufValue::u32(u32(a.qLoraRank, "q_lora_rank")));
    m.set(key(keys::kKvLoraRank), GgufValue::u32(u32(a.kvLoraRank, "kv_lora_rank")));
    if (c.ropeScaling.type == model::RopeScalingType::Yarn && c.ropeScaling.mscaleAllDim != 0.0)
        m.set(key(keys::kRopeScalingYarnLogMultiplier),
              GgufValue::f32(static_cast<float>(0.1 * c.ropeScaling.mscaleAllDim)));
}

// Qwen3.5's linear attention as llama.cpp's Qwen3-Next / Qwen3.5 converter writes it: its sizes under the
// ssm keys, the period of the full attention layers (requireGgufExpressible checks layer_types follows one)
// and the interleaved M-RoPE sections, [11, 11, 10, 0] when the config names none.
template <typename Key>
void putLinearAttention(io::GgufMetadata& m, const model::ModelConfig& c, const Key& key) {
    const model::LinearAttentionConfig& la = c.linearAttention;
    m.set(key(keys::kSsmConvKernel), GgufValue::u32(u32(la.convKernel, "linear_conv_kernel_dim")));
    m.set(key(keys::kSsmStateSize), GgufValue::u32(u32(la.keyHeadDim, "linear_key_head_dim")));
    m.set(key(keys::kSsmGroupCount), GgufValue::u32(u32(la.numKeyHeads, "linear_num_key_heads")));
    m.set(key(keys::kSsmTimeStepRank), GgufValue::u32(u32(la.numValueHeads, "linear_num_value_heads")));
    m.set(key(keys::kSsmInnerSize), GgufValue::u32(u32(la.valueDim(), "the linear attention's value width")));
    int interval = 1;
    while (interval < c.numLayers && la.layers[static_cast<std::size_t>(interval - 1)]) ++interval;
    m.set(key(keys::kFullAttentionInterval), GgufValue::u32(u32(interval, "full_attention_interval")));
    if (c.mropeSection.empty()) {
        io::GgufArray sections{io::GgufValueType::I32, {}};
        for (int s : {11, 11, 10, 0}) sections.items.push_back(GgufValue::i32(s));
        m.set(key(keys::kRopeDimensionSections), GgufValue::array(std::move(sections)));
    }
}

}  // namespace

io::GgufMetadata ggufModelMetadata(const model::ModelConfig& c, const architectures::Family& family,
                                   const std::string& name, int fileType) {
    const std::string arch(family.ggufArch);
    io::GgufMetadata m;
    m.set(keys::kArchitecture, GgufValue::string(arch));
    m.set(keys::kType, GgufValue::string("model"));
    m.set(keys::kName, GgufValue::string(name));
    m.set(keys::kFileType, GgufValue::u32(u32(fileType, "file type")));
    const auto key = [&](const char* suffix) { return keys::archKey(arch, suffix); };
    m.set(key(keys::kVocabSize), GgufValue::u32(u32(c.vocabSize, "vocab_size")));
    m.set(key(keys::kContextLength), GgufValue::u32(u32(c.maxPositionEmbeddings, "max_position_embeddings")));
    m.set(key(keys::kEmbeddingLength), GgufValue::u32(u32(c.hiddenSize, "hidden_size")));
    m.set(key(keys::kBlockCount), GgufValue::u32(u32(c.numLayers, "num_hidden_layers")));
    m.set(key(keys::kFeedForwardLength), GgufValue::u32(u32(c.intermediateSize, "intermediate_size")));
    m.set(key(keys::kHeadCount), GgufValue::u32(u32(c.numHeads, "num_attention_heads")));
    m.set(key(keys::kHeadCountKv), GgufValue::u32(u32(c.numKvHeads, "num_key_value_heads")));
    m.set(key(keys::kKeyLength), GgufValue::u32(u32(c.headDim, "head_dim")));
    m.set(key(keys::kValueLength), GgufValue::u32(u32(c.headDim, "head_dim")));
    m.set(key(keys::kRmsEpsilon), GgufValue::f32(static_cast<float>(c.rmsNormEps)));
    m.set(key(keys::kRopeDimensionCount), GgufValue::u32(u32(c.rotaryDims(), "the rotary dimensions")));
    m.set(key(keys::kRopeFreqBase), GgufValue::f32(static_cast<float>(c.ropeTheta)));
    if (c.isMoe()) {  // llama.cpp's LLM_KV_EXPERT_* keys, as its converter writes them
        m.set(key(keys::kExpertCount), GgufValue::u32(u32(c.moe.numExperts, "number of experts")));
        m.set(key(keys::kExpertUsedCount), GgufValue::u32(u32(c.moe.numExpertsPerToken, "num_experts_per_tok")));
        if (family.ggufMetadata.expertWidthKey)  // else feed_forward_length wide (llama's Mixtral)
            m.set(key(keys::kExpertFeedForwardLength),
                  GgufValue::u32(u32(c.moe.expertIntermediateSize, "moe_intermediate_size")));
    }
    if (c.isMoe() && family.ggufMetadata.sigmoidRouterKeys) putSigmoidRouter(m, c, key);
    if (c.isMoe() && family.ggufMetadata.interleaveMoeStepKey)  // the first MoE layer is the step's (llama4)
        for (int layer = 0; layer < c.numLayers; ++layer)
            if (c.isMoeLayer(layer)) {
                m.set(key(keys::kInterleaveMoeLayerStep), GgufValue::u32(u32(layer + 1, "interleave_moe_layer_step")));
                break;
            }
    if (c.mla.active()) putLatentAttention(m, c, key);
    if (c.linearAttention.active()) putLinearAttention(m, c, key);
    if (c.isMoe() && c.moe.sharedExpertGate)
        m.set(key(keys::kExpertSharedFeedForwardLength),
              GgufValue::u32(u32(c.moe.sharedExpertIntermediateSize, "shared_expert_intermediate_size")));
    // Per-layer windows (Gemma 3): the window of the sliding layers, and their own RoPE base.
    if (!c.slidingLayers.empty())
        m.set(key(keys::kSlidingWindow), GgufValue::u32(u32(c.slidingWindow, "sliding_window")));
    // A window on every layer, where llama.cpp's converter writes it (phi3; Mistral's llama arch has no such key).
    if (family.ggufMetadata.windowOnEveryLayerKey && c.slidingWindow > 0)
        m.set(key(keys::kSlidingWindow), GgufValue::u32(u32(c.slidingWindow, "sliding_window")));
    if (c.ropeLocalTheta > 0.0)
        m.set(key(keys::kRopeFreqBaseSwa), GgufValue::f32(static_cast<float>(c.ropeLocalTheta)));
    if (c.ropeScaling.type == model::RopeScalingType::LongRope) {
        // As llama.cpp's Phi-3 converter writes LongRoPE: the attention factor and the original context
        // (beyond it llama.cpp takes rope_factors_long); the factors are tensors (longRopeFactors).
        m.set(key(keys::kRopeScalingAttnFactor), GgufValue::f32(static_cast<float>(c.ropeScaling.attentionFactor)));
        m.set(key(keys::kRopeScalingOriginalContext),
              GgufValue::u32(u32(c.ropeScaling.originalMaxPositionEmbeddings, "original_max_position_embeddings")));
    }
    // Qwen-VL's mRoPE sections as llama.cpp's converter writes them: four, the last (unused by Qwen) 0.
    if (!c.mropeSection.empty()) {
        io::GgufArray sections{io::GgufValueType::I32, {}};
        for (std::size_t i = 0; i < 4; ++i)
            sections.items.push_back(GgufValue::i32(i < c.mropeSection.size() ? c.mropeSection[i] : 0));
        m.set(key(keys::kRopeDimensionSections), GgufValue::array(std::move(sections)));
    }
    if (family.ggufMetadata.deepstackKey)
        m.set(key(keys::kDeepstackLayers), GgufValue::u32(u32(c.deepstackLayers, "deepstack layers")));
    if (c.ropeScaling.type == model::RopeScalingType::Linear) {
        m.set(key(keys::kRopeScalingType), GgufValue::string("linear"));
        m.set(key(keys::kRopeScalingFactor), GgufValue::f32(static_cast<float>(c.ropeScaling.factor)));
    }
    if (c.ropeScaling.type == model::RopeScalingType::Yarn) {  // as llama.cpp's converter writes YaRN
        m.set(key(keys::kRopeScalingType), GgufValue::string("yarn"));
        m.set(key(keys::kRopeScalingFactor), GgufValue::f32(static_cast<float>(c.ropeScaling.factor)));
        m.set(key(keys::kRopeScalingOriginalContext),
              GgufValue::u32(u32(c.ropeScaling.originalMaxPositionEmbeddings, "original_max_position_embeddings")));
    }
    return m;
}

std::vector<std::pair<std::string, std::vector<float>>> longRopeFactors(const model::ModelConfig& c) {
    if (c.ropeScaling.type != model::RopeScalingType::LongRope) return {};
    const auto f32 = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
    return {{keys::kRopeFactorsLong, f32(c.ropeScaling.longFactor)},
            {keys::kRopeFactorsShort, f32(c.ropeScaling.shortFactor)}};
}

std::optional<std::vector<float>> llama3RopeFactors(const model::ModelConfig& c) {
    if (c.ropeScaling.type != model::RopeScalingType::Llama3) return std::nullopt;
    const auto& s = c.ropeScaling;
    const double lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
    const double highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
    std::vector<float> factors;
    for (int i = 0; i < c.headDim; i += 2) {
        // The converter computes the frequency in f32 (torch.arange / dim, base ** ...).
        const float freq =
            1.0f / std::pow(static_cast<float>(c.ropeTheta), static_cast<float>(i) / static_cast<float>(c.headDim));
        const double wavelen = 2.0 * std::numbers::pi / freq;
        if (wavelen < highWavelen) {
            factors.push_back(1.0f);
        } else if (wavelen > lowWavelen) {
            factors.push_back(static_cast<float>(s.factor));
        } else {
            const double smooth =
                (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
            factors.push_back(static_cast<float>(1.0 / ((1.0 - smooth) / s.factor + smooth)));
        }
    }
    return factors;
}

}  // namespace qs::pipeline
