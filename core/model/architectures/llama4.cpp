// Llama 4 (Llama4ForCausalLM, model_type llama4_text; and the text tower of Llama4ForConditionalGeneration,
// model_type llama4): Llama's attention without biases where RoPE layers rotate interleaved pairs (transformers'
// complex apply_rotary_emb), L2-normalise q and k after it (use_qk_norm, no weight) and attend in chunks of
// attention_chunk_size, while every no_rope_layer_interval-th layer is NoPE: no rotation, full causal attention
// and its queries scaled by log1p(floor((pos + 1) / floor_scale)) * attn_scale + 1 (attn_temperature_tuning).
// Every interleave_moe_layer_step-th layer (moe_layers) is a MoE block, feed_forward.router choosing the top-k
// logits whose sigmoid scales each chosen expert's input, plus feed_forward.shared_expert on every token; the
// others a dense feed_forward MLP intermediate_size_mlp wide. The experts are stored fused as
// feed_forward.experts.gate_up_proj [E, H, 2I] (gate columns, then up) and down_proj [E, I, H], x @ W, or per
// expert (quantized releases, vLLM's expert mapping). The config reader's own part: llama4_config.cpp.
// llama.cpp's llama4: q/k not permuted, the shared expert as *_shexp, chunk 8192, NoPE every 4th layer and the
// temperature's floor 8192 and scale 0.1 fixed, q/k norms off for 128 experts.
#include "families.h"

namespace qs::architectures::detail {

namespace {

MoeSpec llama4Experts() {
    return MoeSpec{.numExpertsKey = "num_local_experts",
                   .names = {"feed_forward", "gate_proj", "up_proj", "down_proj", "router", "shared_expert"},
                   .ggufNames = {"feed_forward", "gate_proj", "up_proj", "down_proj", "router", "shared_expert"},
                   .scoring = RouterScoring::SigmoidScalesInput,
                   .fusedTransposed = true};
}

}  // namespace

const Family& llama4Text() {
    static const Family f{
        .modelType = "llama4_text",
        .hfClass = "Llama4ForCausalLM",
        .displayName = "Llama 4",
        .extra = ConfigExtra::Llama4,
        .moe = llama4Experts(),
        .denseMlpBlock = "feed_forward",
        .ggufArch = "llama4",
        .ggufNames = {{"ffn_gate_shexp", "feed_forward.shared_expert.gate_proj"},
                      {"ffn_up_shexp", "feed_forward.shared_expert.up_proj"},
                      {"ffn_down_shexp", "feed_forward.shared_expert.down_proj"}},
        .ggufMetadata = {.interleaveMoeStepKey = true},
        .tensorsHoldQkNorm = false,
    };
    return f;
}

// The vision tower (vision_model.*) and projector (multi_modal_projector.*) are copied through untouched.
const Family& llama4() {
    static const Family f{
        .modelType = "llama4",
        .hfClass = "Llama4ForConditionalGeneration",
        .displayName = "Llama 4",
        .vision = VisionLanguage{.textModelType = "llama4_text",
                                 .textConfigTypes = {"llama4_text"},
                                 .current = {"language_model.model.",
                                             "language_model.lm_head.weight",
                                             {"vision_model.", "multi_modal_projector."}},
                                 .old = {"language_model.model.",
                                         "language_model.lm_head.weight",
                                         {"vision_model.", "multi_modal_projector."}}},
        .denseMlpBlock = "feed_forward",
        .ggufArch = "llama4",
        .ggufReadBack = GgufReadBack::No,
        .ggufMetadata = {.interleaveMoeStepKey = true},
    };
    return f;
}

}  // namespace qs::architectures::detail
