// Gemma 3: the text model (Gemma3ForCausalLM, model_type gemma3_text) and the vision-language model whose
// text tower it is (Gemma3ForConditionalGeneration, gemma3). The (1 + w) norms, sandwich norms, q/k norms,
// gelu-tanh, scaled embeddings and per-layer windows are read by core/model/architectures/gemma3_config.cpp.
//
// llama.cpp's gemma3 names the norms by role (ffn_norm is the norm before the MLP, post_attention_norm and
// post_ffw_norm the sandwich norms), stores them as 1 + w, and fixes every 6th layer global, the local RoPE
// base 10000 and the score scale (convert_hf_to_gguf's Gemma3Model, LLM_ARCH_GEMMA3).
#include "families.h"

namespace qs::architectures::detail {

const Family& gemma3Text() {
    static const Family f{
        .modelType = "gemma3_text",
        .hfClass = "Gemma3ForCausalLM",
        .displayName = "Gemma 3",
        .qkNorm = true,
        .slidingWindow = SlidingWindow::PerLayer,
        .extra = ConfigExtra::Gemma3,
        .ggufArch = "gemma3",
        .ggufNormPlusOne = true,
        .ggufNames = {{"post_attention_norm", "post_attention_layernorm"},
                      {"ffn_norm", "pre_feedforward_layernorm"},
                      {"post_ffw_norm", "post_feedforward_layernorm"}},
        .ggufFixed = {.globalEvery = 6, .localRopeBase = 10000.0, .gemmaQueryScale = true},
    };
    return f;
}

const Family& gemma3Vlm() {
    static const Family f{
        .modelType = "gemma3",
        .hfClass = "Gemma3ForConditionalGeneration",
        .displayName = "Gemma 3 (vision-language)",
        .vision = visionTowerAndProjector("gemma3_text"),
        // The GGUF is the text tower (the converter puts the vision tower in an mmproj file).
        .ggufArch = "gemma3",
        .ggufReadBack = GgufReadBack::No,
    };
    return f;
}

}  // namespace qs::architectures::detail
