// gpt-oss (GptOssForCausalLM): biased attention with a learned sink logit per head, alternating sliding and
// full layers, YaRN, and a biased router over experts stored stacked (mlp.experts.gate_up_proj [E, H, 2I]
// with gate and up interleaved, mlp.experts.down_proj) with a clamped SwiGLU. The config reader's own part:
// core/model/architectures/gpt_oss_config.cpp.
//
// llama.cpp's gpt-oss keeps each expert's gate and up apart (ffn_gate_exps, ffn_up_exps, with biases), so a
// GGUF reads back with one gate_proj, up_proj and down_proj per expert; it calls the norm before the MLP
// post_attention_norm and the sinks attn_sinks, and fixes the layer pattern, the SwiGLU limit and YaRN's betas.
#include "families.h"

namespace qs::architectures::detail {

const Family& gptOss() {
    static const Family f{
        .modelType = "gpt_oss",
        .hfClass = "GptOssForCausalLM",
        .displayName = "gpt-oss",
        .attentionBias = AttentionBias::FlagDefaultOn,
        .slidingWindow = SlidingWindow::PerLayer,
        .yarn = true,
        .extra = ConfigExtra::GptOss,
        .moe = MoeSpec{.numExpertsKey = "num_local_experts",
                       .names = {"mlp", "gate_up_proj", "", "down_proj", "router"},
                       .ggufNames = {"mlp", "gate_proj", "up_proj", "down_proj", "router"},
                       .clampedSwiglu = true,
                       .stacked = true},
        .ggufArch = "gpt-oss",
        .ggufNames = {{"post_attention_norm", "post_attention_layernorm"},
                      {"attn_sinks", "self_attn.sinks", /*parameter=*/true}},
        .ggufFixed = {.evenLayersSliding = true, .swigluLimit = 7.0f, .yarnBetas = true},
    };
    return f;
}

}  // namespace qs::architectures::detail
