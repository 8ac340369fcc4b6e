// Llama 1-3 (LlamaForCausalLM): the shape every other family departs from.
#include "families.h"

namespace qs::architectures::detail {

const Family& llama() {
    static const Family f{
        .modelType = "llama",
        .hfClass = "LlamaForCausalLM",
        .displayName = "Llama",
        .foldsRotation = true,
        .ggufArch = "llama",
        .ggufReadBack = GgufReadBack::Dense,  // with experts, a llama GGUF is Mixtral
        .ggufPermutesQk = true,
        // Hugging Face's Llama has one attention_bias flag for q/k/v/o and one mlp_bias: read back from blk.0.
        .ggufMetadata = {.biasFlagsFromTensors = true},
        .ggufSeventyBAt80Layers = Family::Seventy::WithGqa,
        .tensorsHoldQkNorm = false,
    };
    return f;
}

}  // namespace qs::architectures::detail
