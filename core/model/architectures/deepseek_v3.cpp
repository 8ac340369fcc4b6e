// DeepSeek-V3 and Kimi-K2 (deepseek_v3): refused, saying what its forward pass needs.
#include "families.h"

namespace qs::architectures::detail {

const Family& deepseekV3() {
    static const Family f{
        .modelType = "deepseek_v3",
        .displayName = "DeepSeek-V3",
        .notYet =
            "its multi-head latent attention (q_lora_rank, kv_lora_rank, the decoupled RoPE head) is not "
            "implemented (its routing is GLM-4.5's, which is)",
    };
    return f;
}

}  // namespace qs::architectures::detail
