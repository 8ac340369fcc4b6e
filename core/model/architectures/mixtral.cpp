// Mixtral (MixtralForCausalLM): Mistral's attention and a sparse MoE block of SwiGLU experts
// (block_sparse_moe.experts.E.w1/w3/w2), the top-k weights always renormalised. llama.cpp runs it as
// llama with experts (llama.expert_count), the experts intermediate_size wide.
#include "families.h"

namespace qs::architectures::detail {

const Family& mixtral() {
    static const Family f{
        .modelType = "mixtral",
        .hfClass = "MixtralForCausalLM",
        .displayName = "Mixtral",
        .slidingWindow = SlidingWindow::EveryLayer,
        .moe = MoeSpec{.numExpertsKey = "num_local_experts",
                       .names = {"block_sparse_moe", "w1", "w3", "w2"},
                       .ggufNames = {"block_sparse_moe", "w1", "w3", "w2"}},
        .foldsRotation = true,
        .ggufArch = "llama",
        .ggufReadBack = GgufReadBack::WithExperts,
        .ggufPermutesQk = true,
        .ggufMetadata = {.expertWidthKey = false},
        .ggufSeventyBAt80Layers = Family::Seventy::WithGqa,
    };
    return f;
}

}  // namespace qs::architectures::detail
