// GLM-4.5 / 4.6 (Glm4MoeForCausalLM, model_type glm4_moe): Llama's layer with q/k/v biases (attention_bias;
// o_proj never has one), optional per-head q/k norms (use_qk_norm), partial RoPE (partial_rotary_factor,
// rotate_half on the first part of each head), and from layer first_k_dense_replace on a sparse MoE block:
// a sigmoid router with e_score_correction_bias and group-limited top-k (n_group, topk_group), the chosen
// weights renormalised (norm_topk_prob) and scaled (routed_scaling_factor), plus a shared expert
// (mlp.shared_experts, n_shared_experts experts wide) that every token runs through.
// llama.cpp's glm4moe: NEOX RoPE on rope.dimension_count dimensions (no q/k permutation), the norm before
// the MLP as post_attention_norm, the correction bias as exp_probs_b.bias, the shared expert as *_shexp.
// Its next-token-prediction layers (num_nextn_predict_layers, stored after the decoder's) are not run.
#include "families.h"

namespace qs::architectures::detail {

const Family& glm4Moe() {
    static const Family f{
        .modelType = "glm4_moe",
        .hfClass = "Glm4MoeForCausalLM",
        .displayName = "GLM-4.5",
        .attentionBias = AttentionBias::QkvFlag,
        .qkNormKey = "use_qk_norm",
        .partialRotary = true,
        .moe = MoeSpec{.numExpertsKey = "n_routed_experts",
                       .expertSizeKey = "moe_intermediate_size",
                       .normTopkDefault = true,  // Glm4MoeConfig's default
                       .names = {"mlp", "gate_proj", "up_proj", "down_proj", "gate", "shared_experts"},
                       .ggufNames = {"mlp", "gate_proj", "up_proj", "down_proj", "gate", "shared_experts"},
                       .scoring = RouterScoring::SigmoidGrouped,
                       .sharedExpertsKey = "n_shared_experts",
                       .firstDenseKey = "first_k_dense_replace"},
        .trailingLayersKey = "num_nextn_predict_layers",
        .ggufArch = "glm4moe",
        .ggufNames = {{"post_attention_norm", "post_attention_layernorm"},
                      {"ffn_gate_shexp", "mlp.shared_experts.gate_proj"},
                      {"ffn_up_shexp", "mlp.shared_experts.up_proj"},
                      {"ffn_down_shexp", "mlp.shared_experts.down_proj"},
                      {"exp_probs_b", "mlp.gate.e_score_correction_bias", true, "bias"}},
        .ggufMetadata = {.biasFlagsFromTensors = true, .sigmoidRouterKeys = true},
    };
    return f;
}

}  // namespace qs::architectures::detail
