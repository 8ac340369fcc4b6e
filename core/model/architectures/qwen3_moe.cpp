// Qwen3-MoE (Qwen3MoeForCausalLM): Qwen3's attention and a sparse MoE block (mlp.experts.E.gate/up/down_proj,
// router mlp.gate) moe_intermediate_size wide, on the layers decoder_sparse_step and mlp_only_layers choose.
// llama.cpp's qwen3moe puts experts in every layer and always renormalises the top-k weights.
#include "families.h"

namespace qs::architectures::detail {

const Family& qwen3Moe() {
    static const Family f{
        .modelType = "qwen3_moe",
        .hfClass = "Qwen3MoeForCausalLM",
        .displayName = "Qwen3-MoE",
        .qkNorm = true,
        .moe = MoeSpec{.numExpertsKey = "num_experts",
                       .expertSizeKey = "moe_intermediate_size",
                       .normTopkDefault = false,  // Qwen3MoeConfig's default
                       .sparseLayers = true,
                       .names = {"mlp", "gate_proj", "up_proj", "down_proj"},
                       .ggufNames = {"mlp", "gate_proj", "up_proj", "down_proj"}},
        .foldsRotation = true,
        .ggufArch = "qwen3moe",
        .ggufFixed = {.expertsEveryLayerRenormalised = true},
    };
    return f;
}

}  // namespace qs::architectures::detail
