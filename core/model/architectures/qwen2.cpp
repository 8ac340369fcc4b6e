// Qwen2 / Qwen2.5 (Qwen2ForCausalLM): Llama's decoder whose q/k/v always carry biases (and o_proj never),
// whatever attention_bias says.
#include "families.h"

namespace qs::architectures::detail {

const Family& qwen2() {
    static const Family f{
        .modelType = "qwen2",
        .hfClass = "Qwen2ForCausalLM",
        .displayName = "Qwen2",
        .attentionBias = AttentionBias::QkvAlways,
        .foldsRotation = true,
        .ggufArch = "qwen2",
        .ggufSeventyBAt80Layers = Family::Seventy::Always,
        .tensorsHoldQkNorm = false,
        .tensorsHoldQkvBias = true,
    };
    return f;
}

}  // namespace qs::architectures::detail
