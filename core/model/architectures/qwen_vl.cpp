// The text towers of Qwen2.5-VL (a Qwen2 decoder) and Qwen3-VL (a Qwen3 decoder): their multimodal RoPE
// (rope_scaling.mrope_section) is plain RoPE for text tokens. llama.cpp's converter writes the text tower as
// qwen2vl / qwen3vl (rope.dimension_sections; Qwen3-VL's deepstack layer count), which read back as the
// text families. The layouts: ^visual -> model.visual, ^model(?!.(language_model|visual)) -> model.language_model.
#include "families.h"

namespace qs::architectures::detail {

namespace {

VisionLanguage qwenTower(std::string_view text, std::set<std::string> configTypes, bool required, bool deepstack) {
    return VisionLanguage{.textModelType = text,
                          .textConfigTypes = std::move(configTypes),
                          .textConfigRequired = required,
                          .multimodalRope = true,
                          .deepstack = deepstack,
                          .current = {"model.language_model.", "lm_head.weight", {"model.visual."}},
                          .old = {"model.", "lm_head.weight", {"visual."}}};
}

}  // namespace

const Family& qwen25Vl() {
    static const Family f{
        .modelType = "qwen2_5_vl",
        .hfClass = "Qwen2_5_VLForConditionalGeneration",
        .displayName = "Qwen2.5-VL",
        // Before transformers 4.52 the text fields may sit at the top level.
        .vision = qwenTower("qwen2", {"qwen2_5_vl_text", "qwen2_5_vl"}, false, false),
        .ggufArch = "qwen2vl",
    };
    return f;
}

const Family& qwen3Vl() {
    static const Family f{
        .modelType = "qwen3_vl",
        .hfClass = "Qwen3VLForConditionalGeneration",
        .displayName = "Qwen3-VL",
        .vision = qwenTower("qwen3", {"qwen3_vl_text", "qwen3_vl"}, true, true),
        .ggufArch = "qwen3vl",
        .ggufMetadata = {.deepstackKey = true},
    };
    return f;
}

const Family& qwen3VlMoe() {
    static const Family f{
        .modelType = "qwen3_vl_moe",
        .displayName = "Qwen3-VL-MoE",
        .notYet =
            "its text tower's experts are stored stacked (mlp.experts.gate_up_proj, mlp.experts.down_proj: "
            "one tensor for all experts), which is not read yet; the dense qwen3_vl is supported",
    };
    return f;
}

}  // namespace qs::architectures::detail
