// Qwen3.5 (Qwen3_5ForCausalLM, model_type qwen3_5_text; the vision-language Qwen3_5ForConditionalGeneration,
// qwen3_5, whose text tower it is) and Qwen3.5-MoE (qwen3_5_moe_text, qwen3_5_moe): a hybrid decoder whose
// layers are, as layer_types says (default: every full_attention_interval-th full), either
//  - Gated DeltaNet linear attention (linear_attn.in_proj_qkv / in_proj_z / in_proj_b / in_proj_a, a causal
//    depthwise conv1d with SiLU, A_log, dt_bias, a gated RMSNorm, out_proj: gated_delta_net.h), or
//  - gated full attention (q_proj gives each head's query and its sigmoid output gate, q/k norms, partial
//    RoPE of partial_rotary_factor, default 0.25),
// with (1 + w) RMSNorms everywhere but the DeltaNet's gated norm. The MoE variant puts a softmax top-k
// router (always renormalised), transformers 5's fused experts and a shared expert scaled by
// sigmoid(mlp.shared_expert_gate(x)) in every layer. Its multi-token-prediction layers (mtp.*) are not run
// and pass through every export untouched, as the vision tower (model.visual.*) does.
// llama.cpp's qwen35 / qwen35moe (convert_hf_to_gguf.py's Qwen3_5TextModel): A_log stored as -exp(A_log)
// (ssm_a), conv1d squeezed to [channels, kernel], every norm but ssm_norm stored as 1 + w, value heads
// reordered from grouped to tiled when there are fewer key heads (pipeline::writeGguf applies all three),
// interleaved M-RoPE sections (plain RoPE for text). The GGUF reader undoes each (core/io/gguf_checkpoint.cpp).
#include "families.h"

namespace qs::architectures::detail {

namespace {

// The names both variants share: the DeltaNet's tensors and the full attention's post-attention norm.
std::vector<GgufName> deltaNetGgufNames() {
    return {{"post_attention_norm", "post_attention_layernorm"},
            {"attn_qkv", "linear_attn.in_proj_qkv"},
            {"attn_gate", "linear_attn.in_proj_z"},
            {"ssm_beta", "linear_attn.in_proj_b"},
            {"ssm_alpha", "linear_attn.in_proj_a"},
            {"ssm_conv1d", "linear_attn.conv1d"},
            {"ssm_norm", "linear_attn.norm"},
            {"ssm_out", "linear_attn.out_proj"},
            {"ssm_dt", "linear_attn.dt_bias", true, "bias"},
            {"ssm_a", "linear_attn.A_log", true, ""}};
}

// The DeltaNet's names, and the MoE's shared expert and its gate.
std::vector<GgufName> ggufNamesOf(bool moe) {
    std::vector<GgufName> names = deltaNetGgufNames();
    if (moe)
        names.insert(names.end(), {{"ffn_gate_shexp", "mlp.shared_expert.gate_proj"},
                                   {"ffn_up_shexp", "mlp.shared_expert.up_proj"},
                                   {"ffn_down_shexp", "mlp.shared_expert.down_proj"},
                                   {"ffn_gate_inp_shexp", "mlp.shared_expert_gate"}});
    return names;
}

Family qwen35Text(std::string_view modelType, std::string_view hfClass, std::string_view displayName, bool moe) {
    Family f{
        .modelType = modelType,
        .hfClass = hfClass,
        .displayName = displayName,
        .qkNorm = true,
        .partialRotary = true,
        .extra = ConfigExtra::Qwen35,
        .textMultimodalRope = true,
        .ggufArch = moe ? "qwen35moe" : "qwen35",
        .ggufNormPlusOne = true,
        .ggufNames = ggufNamesOf(moe),
        .tensorsHoldQkNorm = true,
    };
    if (moe) {
        f.moe = MoeSpec{.numExpertsKey = "num_experts",
                        .expertSizeKey = "moe_intermediate_size",
                        .names = {"mlp", "gate_proj", "up_proj", "down_proj", "gate", "shared_expert"},
                        .ggufNames = {"mlp", "gate_proj", "up_proj", "down_proj", "gate", "shared_expert"},
                        .sharedExpertSizeKey = "shared_expert_intermediate_size",
                        .sharedExpertGate = true};
        f.ggufFixed.expertsEveryLayerRenormalised = true;  // qwen35moe: build_moe_ffn with norm_w, every layer
    }
    return f;
}

// The vision-language checkpoints: the text tower under model.language_model., the vision tower under
// model.visual. and the multi-token-prediction layers under mtp., both copied through.
Family qwen35Vlm(std::string_view modelType, std::string_view hfClass, std::string_view displayName,
                 std::string_view text) {
    return Family{
        .modelType = modelType,
        .hfClass = hfClass,
        .displayName = displayName,
        .vision = VisionLanguage{.textModelType = text,
                                 .textConfigTypes = {std::string(text)},
                                 .textConfigRequired = true,
                                 .multimodalRope = true,
                                 .current = {"model.language_model.", "lm_head.weight", {"model.visual.", "mtp."}},
                                 .old = {"model.language_model.", "lm_head.weight", {"model.visual.", "mtp."}}},
        .ggufArch = text == "qwen3_5_moe_text" ? "qwen35moe" : "qwen35",
        .ggufReadBack = GgufReadBack::No,  // a VLM's GGUF is its text tower: qwen35 / qwen35moe read back so
    };
}

}  // namespace

const Family& qwen35() {
    static const Family f = qwen35Text("qwen3_5_text", "Qwen3_5ForCausalLM", "Qwen3.5", false);
    return f;
}

const Family& qwen35Moe() {
    static const Family f = qwen35Text("qwen3_5_moe_text", "Qwen3_5MoeForCausalLM", "Qwen3.5-MoE", true);
    return f;
}

const Family& qwen35Vl() {
    static const Family f =
        qwen35Vlm("qwen3_5", "Qwen3_5ForConditionalGeneration", "Qwen3.5 (vision-language)", "qwen3_5_text");
    return f;
}

const Family& qwen35MoeVl() {
    static const Family f = qwen35Vlm("qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration",
                                      "Qwen3.5-MoE (vision-language)", "qwen3_5_moe_text");
    return f;
}

}  // namespace qs::architectures::detail
