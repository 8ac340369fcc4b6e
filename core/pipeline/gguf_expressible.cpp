// What llama.cpp's graph fixes for an architecture, checked against a config (gguf_expressible.h).
#include "gguf_expressible.h"

#include <cmath>
#include <functional>

#include "qs/architectures/registry.h"
#include "qs/error.h"

namespace qs::pipeline {

namespace {

// A layer pattern llama.cpp's graph fixes (GgufFixed): a config whose windows break it would run as another
// model there.
void requireLayerPattern(const model::ModelConfig& config, const std::function<bool(int)>& sliding,
                         const std::string& pattern, const std::string& arch, const std::string& source) {
    for (int layer = 0; layer < config.numLayers; ++layer)
        if (config.windowOf(layer) != (sliding(layer) ? config.slidingWindow : 0))
            throw Error(source + ": layer " + std::to_string(layer) +
                        "'s attention type breaks the pattern llama.cpp's " + arch + " assumes (" + pattern + ")");
}

// deepseek2's YaRN (llama_context's yarn_attn_factor and the graph's kq_scale): betas 32 and 1, cos and sin
// unscaled (it takes mscale = mscale_all_dim), and the scores scaled by get_mscale(factor, mscale_all_dim)²
// from yarn_log_multiplier. transformers scales cos and sin by its attention factor and the scores by
// mscale² only with mscale_all_dim: the two agree when the attention factor is 1 and mscale_all_dim is set.
void requireDeepseekYarn(const model::RopeScaling& r, const std::string& arch, const std::string& source) {
    if (r.type != model::RopeScalingType::Yarn || r.factor <= 1.0) return;
    if (r.betaFast != 32.0 || r.betaSlow != 1.0)
        throw Error(source + ": rope_scaling yarn with beta_fast " + std::to_string(r.betaFast) + " and beta_slow " +
                    std::to_string(r.betaSlow) + ": llama.cpp's " + arch + " uses 32 and 1");
    if (r.mscaleAllDim == 0.0 || std::abs(r.attentionFactor - 1.0) > 1e-12)
        throw Error(source + ": rope_scaling yarn with attention factor " + std::to_string(r.attentionFactor) +
                    " and mscale_all_dim " + std::to_string(r.mscaleAllDim) + ": llama.cpp's " + arch +
                    " leaves cos and sin unscaled and scales the scores by mscale_all_dim's mscale², which is "
                    "transformers' model only with mscale = mscale_all_dim");
}

// DeepSeek's latent attention as llama.cpp's deepseek2 runs it: no attention biases, and adjacent rotary
// pairs (its NORM RoPE, which is rope_interleave's layout; its converter does not reorder the rows).
void requireLatentExpressible(const model::ModelConfig& config, const std::string& arch, const std::string& source) {
    if (config.qkvBias || config.outputBias)
        throw Error(source + ": attention_bias is true, and llama.cpp's " + arch +
                    " has no bias on q_a_proj, kv_a_proj_with_mqa or o_proj");
    if (!config.mla.ropeInterleave)
        throw Error(source + ": rope_interleave is false, and llama.cpp's " + arch +
                    " rotates adjacent pairs (the interleaved layout)");
}

// Llama 4 as llama.cpp's llama4 graph runs it (llama_model_llama4::load_arch_hparams): MoE layers every
// interleave_moe_layer_step-th, NoPE every 4th layer and the others chunked by 8192, the NoPE layers' temperature
// tuning always on with floor 8192 and scale 0.1, and the L2 q/k norm on exactly when there are not 128 experts.
void requireLlama4Expressible(const model::ModelConfig& config, const std::string& arch, const std::string& source) {
    const model::Llama4Attention& a = config.llama4;
    int step = 0;
    for (int layer = 0; layer < config.numLayers && step == 0; ++layer)
        if (config.isMoeLayer(layer)) step = layer + 1;
    for (int layer = 0; layer < config.numLayers; ++layer) {
        const auto at = static_cast<std::size_t>(layer);
        if (config.isMoeLayer(layer) != (step > 0 && (layer + 1) % step == 0))
            throw Error(source + ": moe_layers are not every " + std::to_string(step) + "th layer, which llama.cpp's " +
                        arch + " assumes (interleave_moe_layer_step)");
        if (a.rope[at] != ((layer + 1) % 4 != 0))
            throw Error(source + ": layer " + std::to_string(layer) + (a.rope[at] ? " rotates" : " is NoPE") +
                        ", and llama.cpp's " + arch + " makes every 4th layer NoPE and rotates the others");
        if (a.chunked[at] != (layer % 4 != 3))
            throw Error(source + ": layer " + std::to_string(layer) + "'s attention is " +
                        (a.chunked[at] ? "chunked" : "full") + ", and llama.cpp's " + arch +
                        " chunks three layers of every four and attends fully in the fourth");
    }
    if (a.chunkSize != 8192)
        throw Error(source + ": attention_chunk_size is " + std::to_string(a.chunkSize) + ", and llama.cpp's " + arch +
                    " chunks by 8192");
    if (!a.temperatureTuning || a.floorScale != 8192.0 || a.attnScale != 0.1)
        throw Error(source + ": attn_temperature_tuning with floor_scale " + std::to_string(a.floorScale) +
                    " and attn_scale " + std::to_string(a.attnScale) + " (" + (a.temperatureTuning ? "on" : "off") +
                    "), and llama.cpp's " + arch + " always tunes with 8192 and 0.1");
    if (a.l2QkNorm != (config.moe.numExperts != 128))
        throw Error(source + ": use_qk_norm is " + (a.l2QkNorm ? "true" : "false") + " with " +
                    std::to_string(config.moe.numExperts) + " experts, and llama.cpp's " + arch +
                    " normalises q and k exactly when there are not 128");
}

// Qwen3.5's hybrid layers as llama.cpp's qwen35 / qwen35moe runs them: every full_attention_interval-th layer full
// (the only layer pattern its converter writes), key and value heads of one width (its ssm.state_size), no
// attention biases.
void requireLinearAttentionExpressible(const model::ModelConfig& config, const std::string& arch,
                                       const std::string& source) {
    const model::LinearAttentionConfig& la = config.linearAttention;
    int interval = 1;
    while (interval < config.numLayers && la.layers[static_cast<std::size_t>(interval - 1)]) ++interval;
    for (int layer = 0; layer < config.numLayers; ++layer)
        if (config.isLinearAttentionLayer(layer) != ((layer + 1) % interval != 0))
            throw Error(source + ": layer " + std::to_string(layer) + "'s type breaks the pattern llama.cpp's " + arch +
                        " reads (every full_attention_interval-th layer full attention, the others linear)");
    if (la.keyHeadDim != la.valueHeadDim)
        throw Error(source + ": linear_key_head_dim " + std::to_string(la.keyHeadDim) +
                    " differs from linear_value_head_dim " + std::to_string(la.valueHeadDim) + ", and llama.cpp's " +
                    arch + " reads both as ssm.state_size");
    if (config.qkvBias || config.outputBias)
        throw Error(source + ": attention_bias is true, and llama.cpp's " + arch + " has no attention biases");
}

}  // namespace

// What llama.cpp's graph for the family fixes (Family::ggufFixed) and the config spells otherwise: the
// windows' pattern, the local RoPE base, the score scale, the clamped SwiGLU's limit, YaRN's betas and
// attention factor, experts in every layer with renormalised top-k weights. Such a config would run as
// another model there. (llama.cpp's gpt-oss always rounds YaRN's correction range out to whole dimensions,
// as transformers does only with truncate true; with truncate false, as OpenAI's config says, llama.cpp
// itself runs gpt-oss that way.)
void requireGgufExpressible(const architectures::Family& family, const model::ModelConfig& config,
                            const std::string& source) {
    // A VLM's GGUF is its text tower, which llama.cpp runs as the text family's graph.
    const architectures::GgufFixed& fixed = architectures::textFamilyOf(family).ggufFixed;
    const std::string arch(family.ggufArch);
    if (fixed.globalEvery > 0)
        requireLayerPattern(
            config, [&](int layer) { return (layer + 1) % fixed.globalEvery != 0; },
            "every " + std::to_string(fixed.globalEvery) + "th layer global", arch, source);
    if (fixed.evenLayersSliding)
        requireLayerPattern(
            config, [](int layer) { return layer % 2 == 0; }, "even layers sliding, odd layers full", arch, source);
    if (fixed.localRopeBase > 0.0 && config.ropeLocalTheta != fixed.localRopeBase)
        throw Error(source + ": rope_local_base_freq is " + std::to_string(config.ropeLocalTheta) +
                    ", and llama.cpp's " + arch + " uses " + std::to_string(static_cast<int>(fixed.localRopeBase)));
    if (fixed.gemmaQueryScale) {
        const double llamaCppScalar =
            config.numLayers == 62 ? double(config.hiddenSize / config.numHeads) : double(config.headDim);
        if (config.queryPreAttnScalar != llamaCppScalar)
            throw Error(source + ": query_pre_attn_scalar is " + std::to_string(config.queryPreAttnScalar) +
                        ", and llama.cpp's " + arch + " scales by " + std::to_string(llamaCppScalar) +
                        "^-1/2 for this model");
    }
    if (fixed.swigluLimit > 0.0f && config.moe.swigluLimit != fixed.swigluLimit)
        throw Error(source + ": swiglu_limit is " + std::to_string(config.moe.swigluLimit) + ", and llama.cpp's " +
                    arch + " clamps at " + std::to_string(static_cast<int>(fixed.swigluLimit)));
    const model::RopeScaling& r = config.ropeScaling;
    if (fixed.yarnBetas && r.type == model::RopeScalingType::Yarn &&
        (r.betaFast != 32.0 || r.betaSlow != 1.0 ||
         std::abs(r.attentionFactor - (0.1 * std::log(r.factor) + 1.0)) > 1e-12))
        throw Error(source + ": rope_scaling yarn with beta_fast " + std::to_string(r.betaFast) + ", beta_slow " +
                    std::to_string(r.betaSlow) + " or its own attention_factor: llama.cpp's " + arch +
                    " uses 32, 1 and 0.1 ln(factor) + 1");
    if (fixed.yarnLogMultiplier) requireDeepseekYarn(r, arch, source);
    if (config.mla.active()) requireLatentExpressible(config, arch, source);
    if (config.llama4.active()) requireLlama4Expressible(config, arch, source);
    if (config.linearAttention.active()) requireLinearAttentionExpressible(config, arch, source);
    if (!fixed.expertsEveryLayerRenormalised) return;
    if (!config.moe.normTopkProb)
        throw Error(source + ": norm_topk_prob is false, and llama.cpp's " + arch +
                    " always renormalises the top-k routing weights");
    for (int layer = 0; layer < config.numLayers; ++layer)
        if (!config.isMoeLayer(layer))
            throw Error(source + ": layer " + std::to_string(layer) +
                        " is a dense MLP (mlp_only_layers / decoder_sparse_step), and llama.cpp's " + arch +
                        " expects experts in every layer");
}

}  // namespace qs::pipeline
