#pragma once
// The Overview's layer × expert view of a mixture-of-experts checkpoint: which expert linears it can show
// ("experts: gate_proj"; gpt-oss's "experts: gate_up_proj"), and, for one of them, which cell is which
// expert of which layer, which tensor a click on the cell selects, and where the expert's weights are
// read from: its own tensor (Qwen3-MoE "mlp.experts.3.gate_proj.weight", Mixtral "…experts.3.w1.weight"),
// its slice of a stacked float tensor (gpt-oss "mlp.experts.gate_up_proj" [E, in, out]), or its part of
// gpt-oss's stacked MXFP4 blocks ("mlp.experts.gate_up_proj_blocks" [E, out, in/32, 16]), decoded.
// Found from tensor names and shapes alone, so it works on architectures QuantScope cannot run.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qs/io/checkpoint.h"

namespace qs::gui {

// One choice of the Overview's module list: one linear of every expert.
struct ExpertLinear {
    std::string container;  // "mlp.experts", "block_sparse_moe.experts"
    std::string linear;     // "gate_proj", "w1", "gate_up_proj"
    bool operator==(const ExpertLinear&) const = default;
};

enum class ExpertSource {
    Tensor,        // the expert's own float "weight"
    StackedSlice,  // expert e's [in, out] slice of a stacked float tensor
    StackedMxfp4,  // expert e of gpt-oss MXFP4 blocks: decoded by formats::LinearReader
};

struct ExpertCell {
    int layer = -1;
    int expert = -1;
    std::string tensor;  // the tree's leaf a click selects: the expert's weight, or the stacked tensor holding it
    ExpertSource source = ExpertSource::Tensor;
    std::string
        linearPrefix;  // StackedMxfp4: the formats::LinearRef prefix ("model.layers.0.mlp.experts.gate_up_proj")
};

struct ExpertLayout {
    std::vector<int> layers;        // ascending: the layers that have this linear's experts
    int experts = 0;                // columns 0 .. experts - 1
    std::vector<ExpertCell> cells;  // by layer, then expert
};

// Every expert linear of the checkpoint's decoder (a VLM's vision tower left out), in the order the
// tree shows modules (gate, up, down); empty for a dense checkpoint.
std::vector<ExpertLinear> expertLinears(const io::Checkpoint& checkpoint);
ExpertLayout expertLayout(const io::Checkpoint& checkpoint, const ExpertLinear& linear);

// Whether `tensor` is the weight of one expert or of stacked experts (what the layer × expert view shows,
// and the dense view leaves out).
bool isExpertWeight(const io::CheckpointTensor& tensor);

// The tensor holding expert `module` of `layer`, as the module log names it ("mlp.experts.3.gate_proj",
// gpt-oss's "mlp.experts.3.gate_up_proj"): its own weight, or the stacked tensor of every expert.
// nullopt when the checkpoint has none.
std::optional<std::string> expertWeightTensor(const io::Checkpoint& checkpoint, int layer, std::string_view module);

}  // namespace qs::gui
