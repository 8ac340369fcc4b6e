// Mistral 3 (Mistral3ForConditionalGeneration): a vision-language model whose text tower is Mistral's
// decoder; llama.cpp's converter writes that tower as llama (Mistral3Model).
#include "families.h"

namespace qs::architectures::detail {

const Family& mistral3() {
    static const Family f{
        .modelType = "mistral3",
        .hfClass = "Mistral3ForConditionalGeneration",
        .displayName = "Mistral 3",
        .vision = VisionLanguage{.textModelType = "mistral",
                                 .textConfigTypes = {"mistral"},
                                 .current = {"model.language_model.",
                                             "lm_head.weight",
                                             {"model.vision_tower.", "model.multi_modal_projector."}},
                                 .old = {"language_model.model.",
                                         "language_model.lm_head.weight",
                                         {"vision_tower.", "multi_modal_projector."}}},
        .ggufArch = "llama",
        .ggufReadBack = GgufReadBack::No,
        .ggufPermutesQk = true,
        .ggufSeventyBAt80Layers = Family::Seventy::WithGqa,
    };
    return f;
}

}  // namespace qs::architectures::detail
