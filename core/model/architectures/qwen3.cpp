// Qwen3 (Qwen3ForCausalLM): Llama's decoder with a per-head RMSNorm of q and k before RoPE.
#include "families.h"

namespace qs::architectures::detail {

const Family& qwen3() {
    static const Family f{
        .modelType = "qwen3",
        .hfClass = "Qwen3ForCausalLM",
        .displayName = "Qwen3",
        .qkNorm = true,
        .foldsRotation = true,
        .ggufArch = "qwen3",
        .tensorsHoldQkNorm = true,
    };
    return f;
}

}  // namespace qs::architectures::detail
