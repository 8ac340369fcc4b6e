#pragma once
// Where a mixture-of-experts module sits: its experts container, the expert's index, and the rest of its
// name. Per-expert layouts carry the index ("mlp.experts.3.up_proj", Mixtral's
// "block_sparse_moe.experts.3.w1"); gpt-oss stacks every expert in one tensor ("mlp.experts" holding
// "gate_up_proj", "mlp.experts.gate_up_proj" holding its "_bias" or "_blocks"): index -1. A router
// ("mlp.gate", "mlp.router") and a shared expert ("mlp.shared_expert", DeepSeek's "mlp.shared_experts")
// are dense linears of the layer, not experts: they give nullopt.
#include <optional>
#include <string>
#include <string_view>

namespace qs::gui {

struct ExpertPath {
    std::string container;  // "mlp.experts", "block_sparse_moe.experts"
    int expert = -1;        // the expert's index; -1 when the tensors stack every expert
    std::string rest;       // after the index (or the container): "up_proj", "w1"; "" for gpt-oss's "mlp.experts"
};

// `module` as io::TensorName and pipeline::ModuleLog name it (relative to the decoder layer).
std::optional<ExpertPath> parseExpertPath(std::string_view module);

}  // namespace qs::gui
