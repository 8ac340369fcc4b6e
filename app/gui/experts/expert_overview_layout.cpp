#include "experts/expert_overview_layout.h"

#include <algorithm>
#include <map>

#include "qs/analysis/layer_overview.h"
#include "qs/io/tensor_name.h"

#include "experts/expert_path.h"

namespace qs::gui {
namespace {

// What one tensor of a decoder layer holds of the experts: one expert's weight, or every expert's.
struct ExpertWeight {
    ExpertLinear linear;
    ExpertSource source = ExpertSource::Tensor;
    int expert = -1;  // Tensor: the expert's index
    int stacked = 0;  // StackedSlice / StackedMxfp4: how many experts the tensor holds
};

std::optional<ExpertWeight> classify(const io::CheckpointTensor& t) {
    if (t.naming.layer < 0 || io::isTowerTensor(t.info->name)) return std::nullopt;
    const auto path = parseExpertPath(t.naming.module);
    if (!path) return std::nullopt;
    const auto& shape = t.info->shape;
    if (path->expert >= 0) {  // "mlp.experts.3.gate_proj" + "weight"
        if (t.naming.part != "weight" || shape.size() != 2 || !t.info->decodesToF32()) return std::nullopt;
        return ExpertWeight{{path->container, path->rest}, ExpertSource::Tensor, path->expert, 0};
    }
    if (path->rest.empty()) {  // "mlp.experts" + "gate_up_proj": [E, in, out] (its bias is "…gate_up_proj" + "bias")
        if (shape.size() != 3 || shape[0] <= 0 || !t.info->decodesToF32()) return std::nullopt;
        return ExpertWeight{
            {path->container, t.naming.part}, ExpertSource::StackedSlice, -1, static_cast<int>(shape[0])};
    }
    // "mlp.experts.gate_up_proj" + "blocks" (from "_blocks" or ".blocks"): MXFP4 [E, out, in/32, 16].
    if (t.naming.part != "blocks" || shape.size() != 4 || shape[0] <= 0) return std::nullopt;
    return ExpertWeight{{path->container, path->rest}, ExpertSource::StackedMxfp4, -1, static_cast<int>(shape[0])};
}

// "model.layers.0.mlp.experts.gate_up_proj_blocks" → "model.layers.0.mlp.experts.gate_up_proj".
std::string withoutBlocksSuffix(const std::string& name) {
    constexpr std::string_view kSuffix = "blocks";
    return name.substr(0, name.size() - kSuffix.size() - 1);  // and the '_' or '.' before it
}

}  // namespace

bool isExpertWeight(const io::CheckpointTensor& tensor) { return classify(tensor).has_value(); }

std::vector<ExpertLinear> expertLinears(const io::Checkpoint& checkpoint) {
    std::vector<ExpertLinear> found;
    for (const io::CheckpointTensor& t : checkpoint.tensors())
        if (const auto w = classify(t); w && std::find(found.begin(), found.end(), w->linear) == found.end())
            found.push_back(w->linear);
    std::sort(found.begin(), found.end(), [](const ExpertLinear& a, const ExpertLinear& b) {
        const int ra = analysis::moduleRank(a.linear);
        const int rb = analysis::moduleRank(b.linear);
        if (ra != rb) return ra < rb;
        return a.container != b.container ? a.container < b.container : a.linear < b.linear;
    });
    return found;
}

ExpertLayout expertLayout(const io::Checkpoint& checkpoint, const ExpertLinear& linear) {
    std::map<std::pair<int, int>, ExpertCell> cells;  // (layer, expert): sorted as the layout wants them
    for (const io::CheckpointTensor& t : checkpoint.tensors()) {
        const auto w = classify(t);
        if (!w || w->linear != linear) continue;
        const int layer = t.naming.layer;
        if (w->source == ExpertSource::Tensor) {
            cells[{layer, w->expert}] = ExpertCell{layer, w->expert, t.info->name, w->source, {}};
            continue;
        }
        const std::string prefix =
            w->source == ExpertSource::StackedMxfp4 ? withoutBlocksSuffix(t.info->name) : std::string();
        for (int e = 0; e < w->stacked; ++e) cells[{layer, e}] = ExpertCell{layer, e, t.info->name, w->source, prefix};
    }
    ExpertLayout layout;
    for (auto& [where, cell] : cells) {
        if (layout.layers.empty() || layout.layers.back() != where.first) layout.layers.push_back(where.first);
        layout.experts = std::max(layout.experts, where.second + 1);
        layout.cells.push_back(std::move(cell));
    }
    return layout;
}

std::optional<std::string> expertWeightTensor(const io::Checkpoint& checkpoint, int layer, std::string_view module) {
    const auto path = parseExpertPath(module);
    if (!path || path->expert < 0) return std::nullopt;
    const ExpertLinear wanted{path->container, path->rest};
    for (const io::CheckpointTensor& t : checkpoint.tensors()) {
        if (t.naming.layer != layer) continue;
        const auto w = classify(t);
        if (!w || w->linear != wanted) continue;
        if (w->source == ExpertSource::Tensor ? w->expert == path->expert : path->expert < w->stacked)
            return t.info->name;
    }
    return std::nullopt;
}

}  // namespace qs::gui
