// Mistral (MistralForCausalLM): Llama's decoder with a sliding window on every layer. llama.cpp's
// converter writes it as llama, so a GGUF of it reads back as Llama (the window is llama.cpp's to drop).
#include "families.h"

namespace qs::architectures::detail {

const Family& mistral() {
    static const Family f{
        .modelType = "mistral",
        .hfClass = "MistralForCausalLM",
        .displayName = "Mistral",
        .slidingWindow = SlidingWindow::EveryLayer,
        .foldsRotation = true,
        .ggufArch = "llama",
        .ggufReadBack = GgufReadBack::No,
        .ggufPermutesQk = true,
        .ggufSeventyBAt80Layers = Family::Seventy::WithGqa,
        .tensorsHoldQkNorm = false,
    };
    return f;
}

}  // namespace qs::architectures::detail
