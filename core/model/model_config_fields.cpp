#include "qs/model/model_config_fields.h"

#include <iomanip>
#include <sstream>
#include <type_traits>

#include "qs/architectures/registry.h"

namespace qs::model {

namespace {

template <typename T>
std::string text(const T& value) {
    std::ostringstream out;
    out << std::setprecision(17);
    if constexpr (std::is_same_v<T, std::string>) {
        out << "'" << value << "'";
    } else if constexpr (std::is_same_v<T, bool>) {
        out << (value ? "true" : "false");
    } else if constexpr (std::is_enum_v<T>) {
        out << static_cast<int>(value);
    } else if constexpr (requires { value.begin(); }) {
        out << "[";
        for (auto it = value.begin(); it != value.end(); ++it)
            out << (it == value.begin() ? "" : " ") << text(static_cast<std::decay_t<decltype(*it)>>(*it));
        out << "]";
    } else {
        out << value;
    }
    return out.str();
}

// The model type as the forward pass tells it apart: model types that transformers runs with one class are one
// model (Kimi-K2 is DeepseekV3ForCausalLM under its own model_type, and a deepseek2 GGUF of it reads back as
// deepseek_v3).
std::string forwardModelType(const std::string& modelType) {
    const architectures::Family* family = architectures::familyOf(modelType);
    if (family == nullptr || family->hfClass.empty()) return modelType;
    for (const architectures::Family* f : architectures::families())
        if (f->hfClass == family->hfClass) return std::string(f->modelType);
    return modelType;
}

}  // namespace

std::vector<ConfigField> forwardPassFields(const ModelConfig& c) {
    const RopeScaling& r = c.ropeScaling;
    const MoeConfig& m = c.moe;
    std::vector<ConfigField> f{
        {"model_type", text(forwardModelType(c.modelType))},
        {"num_hidden_layers", text(c.numLayers)},
        {"hidden_size", text(c.hiddenSize)},
        {"intermediate_size", text(c.intermediateSize)},
        {"num_attention_heads", text(c.numHeads)},
        {"num_key_value_heads", text(c.numKvHeads)},
        {"head_dim", text(c.headDim)},
        {"vocab_size", text(c.vocabSize)},
        {"rms_norm_eps", text(c.rmsNormEps)},
        {"rope_theta", text(c.ropeTheta)},
        {"rope_scaling.type", text(r.type)},
        {"rope_scaling.factor", text(r.factor)},
        {"rope_scaling.low_freq_factor", text(r.lowFreqFactor)},
        {"rope_scaling.high_freq_factor", text(r.highFreqFactor)},
        {"rope_scaling.original_max_position_embeddings", text(r.originalMaxPositionEmbeddings)},
        {"rope_scaling.attention_factor", text(r.attentionFactor)},
        {"rope_scaling.short_factor", text(r.shortFactor)},
        {"rope_scaling.long_factor", text(r.longFactor)},
        {"partial_rotary_factor (rotary dimensions)", text(c.rotaryDims())},
        {"tie_word_embeddings", text(c.tieWordEmbeddings)},
        {"attention_bias (q/k/v)", text(c.qkvBias)},
        {"attention_bias (o_proj)", text(c.outputBias)},
        {"mlp_bias", text(c.mlpBias)},
        {"q/k norm", text(c.qkNorm)},
        {"sliding_window", text(c.slidingWindow)},
        {"layer_types (sliding layers)", text(c.slidingLayers)},
        {"rope_local_base_freq", text(c.ropeLocalTheta)},
        {"query_pre_attn_scalar", text(c.queryPreAttnScalar)},
        {"embedding scale", text(c.embeddingScale)},
        {"norm offset (1 + w)", text(c.arch.normOffset)},
        {"hidden_activation", text(c.arch.activation)},
        {"attention sinks", text(c.arch.attentionSinks)},
        {"sandwich norms", text(!c.arch.attentionOutputNorm.empty()) + " " + text(!c.arch.mlpOutputNorm.empty())},
        {"experts", text(m.numExperts)},
        {"num_experts_per_tok", text(m.numExpertsPerToken)},
        {"moe_intermediate_size", text(m.expertIntermediateSize)},
        {"norm_topk_prob", text(m.normTopkProb)},
        {"decoder_sparse_step", text(m.sparseStep)},
        {"mlp_only_layers", text(m.denseLayers)},
        {"experts' activation", text(m.activation)},
        {"swiglu_limit", text(m.swigluLimit)},
        {"router scoring (sigmoid)", text(m.scoring)},
        {"n_group", text(m.numGroups)},
        {"topk_group", text(m.topkGroups)},
        {"routed_scaling_factor", text(m.routedScalingFactor)},
        {"shared experts' width", text(m.sharedExpertIntermediateSize)},
        {"first_k_dense_replace", text(m.firstDenseLayers)},
        {"rope_scaling.mscale", text(r.mscale)},
        {"rope_scaling.mscale_all_dim", text(r.mscaleAllDim)},
        {"q_lora_rank", text(c.mla.qLoraRank)},
        {"kv_lora_rank", text(c.mla.kvLoraRank)},
        {"qk_nope_head_dim", text(c.mla.qkNopeHeadDim)},
        {"qk_rope_head_dim", text(c.mla.qkRopeHeadDim)},
        {"v_head_dim", text(c.mla.vHeadDim)},
        {"rope_interleave", text(c.mla.ropeInterleave)},
        {"latent attention's score factor (mscale²)", text(c.mla.scoreFactor)},
        {"no_rope_layers (Llama 4's RoPE layers)", text(c.llama4.rope)},
        {"layer_types (Llama 4's chunked layers)", text(c.llama4.chunked)},
        {"attention_chunk_size", text(c.llama4.chunkSize)},
        {"use_qk_norm (Llama 4's L2 norm)", text(c.llama4.l2QkNorm)},
        {"attn_temperature_tuning", text(c.llama4.temperatureTuning)},
        {"floor_scale", text(c.llama4.floorScale)},
        {"attn_scale", text(c.llama4.attnScale)},
        {"layer_types (linear_attention)", text(c.linearAttention.layers)},
        {"linear_num_key_heads", text(c.linearAttention.numKeyHeads)},
        {"linear_num_value_heads", text(c.linearAttention.numValueHeads)},
        {"linear_key_head_dim", text(c.linearAttention.keyHeadDim)},
        {"linear_value_head_dim", text(c.linearAttention.valueHeadDim)},
        {"linear_conv_kernel_dim", text(c.linearAttention.convKernel)},
        {"the attention's output gate", text(c.attentionOutputGate)},
        {"shared_expert_gate", text(m.sharedExpertGate)},
    };
    return f;
}

std::vector<std::string> forwardPassDifferences(const ModelConfig& a, const ModelConfig& b) {
    const std::vector<ConfigField> fa = forwardPassFields(a), fb = forwardPassFields(b);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < fa.size(); ++i)
        if (fa[i].value != fb[i].value) out.push_back(fa[i].name + " " + fa[i].value + " vs " + fb[i].value);
    return out;
}

}  // namespace qs::model
