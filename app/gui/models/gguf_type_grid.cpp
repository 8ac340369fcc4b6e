#include "models/gguf_type_grid.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <string_view>

#include "qs/io/ggml_type.h"

namespace qs::gui {
namespace {

// The projections as llama.cpp's blocks order them; any other kind follows in file order.
constexpr std::array<std::string_view, 16> kKnownKinds = {
    "attn_q",         "attn_k",       "attn_v",         "attn_qkv",        "attn_output", "ffn_gate",
    "ffn_up",         "ffn_down",     "ffn_gate_inp",   "ffn_gate_exps",   "ffn_up_exps", "ffn_down_exps",
    "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp", "ffn_gate_up_exps"};

struct BlockTensor {
    int layer = -1;
    std::string kind;
};

// "blk.12.attn_q.weight" -> {12, "attn_q"}; nullopt for any other name.
std::optional<BlockTensor> blockTensor(std::string_view name) {
    constexpr std::string_view kBlk = "blk.", kWeight = ".weight";
    if (!name.starts_with(kBlk) || !name.ends_with(kWeight)) return std::nullopt;
    name.remove_prefix(kBlk.size());
    name.remove_suffix(kWeight.size());
    const std::size_t dot = name.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 >= name.size()) return std::nullopt;
    int layer = -1;
    const auto [end, error] = std::from_chars(name.data(), name.data() + dot, layer);
    if (error != std::errc() || end != name.data() + dot || layer < 0) return std::nullopt;
    return BlockTensor{layer, std::string(name.substr(dot + 1))};
}

std::size_t kindRank(const std::string& kind) {
    const auto it = std::find(kKnownKinds.begin(), kKnownKinds.end(), kind);
    return static_cast<std::size_t>(it - kKnownKinds.begin());
}

}  // namespace

GgufTypeGrid GgufTypeGrid::fromFile(const io::GgufFile& file, const std::vector<io::GgufTensorName>& names) {
    GgufTypeGrid grid;
    std::vector<std::pair<const io::TensorInfo*, BlockTensor>> matrices;
    for (const io::TensorInfo& t : file.tensors()) {
        const auto block = blockTensor(t.name);
        if (!block || t.shape.size() < 2 || !t.ggmlType) continue;
        matrices.emplace_back(&t, *block);
        grid.layers_ = std::max(grid.layers_, block->layer + 1);
        if (std::find(grid.kinds_.begin(), grid.kinds_.end(), block->kind) == grid.kinds_.end())
            grid.kinds_.push_back(block->kind);
    }
    std::stable_sort(grid.kinds_.begin(), grid.kinds_.end(),
                     [](const std::string& a, const std::string& b) { return kindRank(a) < kindRank(b); });
    grid.cells_.assign(static_cast<std::size_t>(grid.layers_) * grid.kinds_.size(), std::nullopt);
    for (const auto& [t, block] : matrices) {
        const auto column = std::find(grid.kinds_.begin(), grid.kinds_.end(), block.kind) - grid.kinds_.begin();
        const io::GgmlTypeTraits& traits = io::ggmlTypeTraits(*t->ggmlType);
        grid.cells_[static_cast<std::size_t>(block.layer) * grid.kinds_.size() + static_cast<std::size_t>(column)] =
            GgufTypeCell{std::string(traits.name), traits.bitsPerWeight(), t->name,
                         io::hfNameInGguf(names, t->name).value_or("")};
    }
    return grid;
}

const GgufTypeCell* GgufTypeGrid::cell(int layer, int kind) const {
    if (layer < 0 || kind < 0 || layer >= layers_ || kind >= kinds()) return nullptr;
    const auto& c = cells_[static_cast<std::size_t>(layer) * kinds_.size() + static_cast<std::size_t>(kind)];
    return c ? &*c : nullptr;
}

double GgufTypeGrid::minBits() const {
    double lo = std::numeric_limits<double>::infinity();
    for (const auto& c : cells_)
        if (c) lo = std::min(lo, c->bitsPerWeight);
    return lo;
}

double GgufTypeGrid::maxBits() const {
    double hi = 0.0;
    for (const auto& c : cells_)
        if (c) hi = std::max(hi, c->bitsPerWeight);
    return hi;
}

}  // namespace qs::gui
