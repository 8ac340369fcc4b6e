// Mistral 3 (Mistral3ForConditionalGeneration): a vision-language model whose text tower is Mistral's
// decoder; llama.cpp's converter writes that tower as llama (Mistral3Model).
#include "families.h"

namespace qs::architectures::detail {

const Family& mistral3() {
    static const Family f{
        .modelType = "mistral3",
        .hfClass = "Mistral3ForConditionalGeneration",
        .displayName = "Mistral 3",
        .vision = visionTowerAndProjector("mistral"),
        .ggufArch = "llama",
        .ggufReadBack = GgufReadBack::No,
        .ggufPermutesQk = true,
        .ggufSeventyBAt80Layers = Family::Seventy::WithGqa,
    };
    return f;
}

}  // namespace qs::architectures::detail
