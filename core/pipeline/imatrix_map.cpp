#include "qs/pipeline/imatrix_map.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>

namespace qs::pipeline {
namespace {

struct LayerKind {
    int layer = 0;
    std::string kind;
};

// "blk.12.attn_q.weight" -> (12, "attn_q"); nullopt for an entry outside the decoder layers.
std::optional<LayerKind> layerKindOf(std::string_view entry) {
    constexpr std::string_view kBlock = "blk.";
    if (!entry.starts_with(kBlock)) return std::nullopt;
    entry.remove_prefix(kBlock.size());
    int layer = 0;
    const auto [end, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), layer);
    if (ec != std::errc() || end == entry.data() + entry.size() || *end != '.') return std::nullopt;
    std::string_view kind(end + 1, static_cast<std::size_t>(entry.data() + entry.size() - end - 1));
    if (kind.ends_with(".weight")) kind.remove_suffix(std::string_view(".weight").size());
    return LayerKind{layer, std::string(kind)};
}

// Σx²/count averaged over the columns of each row a token reached, then over those rows.
double meanImportance(const Imatrix::Entry& e) {
    const std::size_t rows = e.counts.size();
    const std::size_t cols = rows == 0 ? 0 : e.sums.size() / rows;
    double total = 0.0;
    std::size_t reached = 0;
    for (std::size_t r = 0; r < rows; ++r) {
        if (e.counts[r] <= 0.0f || cols == 0) continue;
        double row = 0.0;
        for (std::size_t c = 0; c < cols; ++c) row += double(e.sums[r * cols + c]);
        total += row / double(cols) / double(e.counts[r]);
        ++reached;
    }
    return reached == 0 ? 0.0 : total / double(reached);
}

}  // namespace

const ImatrixCell* ImatrixMap::cellAt(int layer, std::size_t kind) const {
    for (const ImatrixCell& c : cells)
        if (c.layer == layer && c.kind == kind) return &c;
    return nullptr;
}

ImatrixMap imatrixMap(const Imatrix& imatrix) {
    ImatrixMap map;
    std::vector<std::pair<LayerKind, const std::string*>> found;
    for (const auto& [name, entry] : imatrix.entries()) {
        if (const auto lk = layerKindOf(name))
            found.emplace_back(*lk, &name);
        else
            map.otherEntries.push_back(name);
    }
    // Kinds in the order the shallowest layer holding them lists them (the entries come sorted by name).
    std::stable_sort(found.begin(), found.end(),
                     [](const auto& a, const auto& b) { return a.first.layer < b.first.layer; });
    for (const auto& [lk, name] : found) {
        auto kind = std::find(map.kinds.begin(), map.kinds.end(), lk.kind);
        if (kind == map.kinds.end()) kind = map.kinds.insert(map.kinds.end(), lk.kind);
        const Imatrix::Entry& e = imatrix.entries().find(*name)->second;
        map.cells.push_back(ImatrixCell{lk.layer, static_cast<std::size_t>(kind - map.kinds.begin()), *name,
                                        meanImportance(e), e.counts.size()});
        map.layers = std::max(map.layers, lk.layer + 1);
    }
    return map;
}

ImatrixCoverage imatrixCoverage(const Imatrix& imatrix, const io::Checkpoint& checkpoint,
                                const model::ModelConfig& config) {
    ImatrixCoverage coverage;
    std::set<std::pair<int, std::string>> seen;  // a quantized linear's parts are one linear
    for (const io::CheckpointTensor& t : checkpoint.tensors()) {
        if (t.naming.role != io::TensorRole::Linear || t.naming.layer < 0 || t.naming.layer >= config.numLayers)
            continue;
        if (!seen.emplace(t.naming.layer, t.naming.module).second) continue;
        const ImatrixPlace place = imatrixPlaceOf(config, t.naming.layer, t.naming.module);
        if (coverage.firstWanted.empty()) coverage.firstWanted = place.names.front();
        ++coverage.linears;
        if (imatrix.entries().contains(place.names.front())) ++coverage.covered;
    }
    return coverage;
}

std::vector<float> columnImportance(const Imatrix& imatrix, const model::ModelConfig& config, int layer,
                                    std::string_view module) {
    const ImatrixPlace place = imatrixPlaceOf(config, layer, module);
    const auto it = imatrix.entries().find(place.names.front());
    if (it == imatrix.entries().end()) return {};
    const Imatrix::Entry& e = it->second;
    // A legacy entry of stacked experts is one row of experts × inputs values.
    const bool legacyStacked = e.counts.size() == 1 && place.rows > 1 && e.cols % place.rows == 0;
    const std::int64_t cols = legacyStacked ? e.cols / place.rows : e.cols;
    const quant::InputImportance importance = imatrix.importanceOf(config, layer, module, cols);
    std::vector<float> out(importance.sumSquares.size());
    std::transform(importance.sumSquares.begin(), importance.sumSquares.end(), out.begin(),
                   [n = float(importance.count)](float v) { return v / n; });
    return out;
}

}  // namespace qs::pipeline
