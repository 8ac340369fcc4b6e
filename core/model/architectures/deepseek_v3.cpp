// DeepSeek-V3 (DeepseekV3ForCausalLM, model_type deepseek_v3) and Kimi-K2 (model_type kimi_k2, the same
// class and layout): multi-head latent attention (q_a_proj / q_a_layernorm / q_b_proj or q_proj,
// kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj; a decoupled rotary head, interleaved as rope_interleave
// says; YaRN's mscale in the softmax scale; its own config part: deepseek_v3_config.cpp) and GLM-4.5's MoE:
// a dense MLP in the first first_k_dense_replace layers, then a sigmoid router with e_score_correction_bias
// and group-limited top-k, routed_scaling_factor and a shared expert. attention_bias gives q_a_proj,
// kv_a_proj_with_mqa and o_proj a bias. Its next-token-prediction layers (num_nextn_predict_layers, after
// the decoder's) are not run.
// llama.cpp's deepseek2: NORM RoPE (adjacent pairs, which rope_interleave's layout is) on
// rope.dimension_count = qk_rope_head_dim, kv_b_proj split into attn_k_b (each head's key rows,
// transposed) and attn_v_b, the correction bias as exp_probs_b.bias, the shared expert as *_shexp. Read back
// (io's gguf_checkpoint.cpp, gguf_config.cpp), attn_k_b and attn_v_b are joined into kv_b_proj again, or
// attn_kv_b is read as it is where an older converter wrote it whole.
#include "families.h"

namespace qs::architectures::detail {

namespace {

// Both write deepseek2; a deepseek2 GGUF reads back as DeepSeek-V3 (`readsGguf`), Kimi-K2's included: the same
// model under another model_type.
Family deepseekFamily(std::string_view modelType, std::string_view displayName, bool readsGguf) {
    return Family{
        .modelType = modelType,
        .hfClass = "DeepseekV3ForCausalLM",
        .displayName = displayName,
        .attentionBias = AttentionBias::Flag,
        .yarn = true,
        .extra = ConfigExtra::DeepseekV3,
        .moe = MoeSpec{.numExpertsKey = "n_routed_experts",
                       .expertSizeKey = "moe_intermediate_size",
                       .normTopkDefault = true,  // DeepseekV3Config's default
                       .names = {"mlp", "gate_proj", "up_proj", "down_proj", "gate", "shared_experts"},
                       .ggufNames = {"mlp", "gate_proj", "up_proj", "down_proj", "gate", "shared_experts"},
                       .scoring = RouterScoring::SigmoidGrouped,
                       .sharedExpertsKey = "n_shared_experts",
                       .firstDenseKey = "first_k_dense_replace"},
        .trailingLayersKey = "num_nextn_predict_layers",
        .ggufArch = "deepseek2",
        .ggufReadBack = readsGguf ? GgufReadBack::Always : GgufReadBack::No,
        .ggufNames = {{"attn_q_a", "self_attn.q_a_proj"},
                      {"attn_q_a_norm", "self_attn.q_a_layernorm"},
                      {"attn_q_b", "self_attn.q_b_proj"},
                      {"attn_kv_a_mqa", "self_attn.kv_a_proj_with_mqa"},
                      {"attn_kv_a_norm", "self_attn.kv_a_layernorm"},
                      {"attn_kv_b", "self_attn.kv_b_proj"},
                      {"ffn_gate_shexp", "mlp.shared_experts.gate_proj"},
                      {"ffn_up_shexp", "mlp.shared_experts.up_proj"},
                      {"ffn_down_shexp", "mlp.shared_experts.down_proj"},
                      {"exp_probs_b", "mlp.gate.e_score_correction_bias", true, "bias"}},
        .ggufMetadata = {.sigmoidRouterKeys = true},
        .ggufFixed = {.yarnLogMultiplier = true},
    };
}

}  // namespace

const Family& deepseekV3() {
    static const Family f = deepseekFamily("deepseek_v3", "DeepSeek-V3", true);
    return f;
}

// Moonshot ships Kimi-K2 as DeepseekV3ForCausalLM under its own model_type (so that engines can tell it apart).
const Family& kimiK2() {
    static const Family f = deepseekFamily("kimi_k2", "Kimi-K2", false);
    return f;
}

}  // namespace qs::architectures::detail
