#include "experts/expert_token_grid.h"

#include <algorithm>
#include <limits>

#include "qs/analysis/layer_overview.h"

#include "experts/expert_path.h"

namespace qs::gui {
namespace {

struct ExpertRow {
    const pipeline::ModuleLog* row;
    int expert;
};

// The log rows of experts (routed tokens reported, an index in the module's name).
std::vector<ExpertRow> expertRows(const std::vector<pipeline::ModuleLog>& rows) {
    std::vector<ExpertRow> out;
    for (const pipeline::ModuleLog& row : rows) {
        if (row.routedTokens < 0 || row.layer < 0) continue;
        const auto path = parseExpertPath(row.module);
        if (path && path->expert >= 0) out.push_back({&row, path->expert});
    }
    return out;
}

void merge(std::optional<ExpertTokens>& cell, const pipeline::ModuleLog& row) {
    if (!cell) {
        cell = ExpertTokens{row.routedTokens, row.samples, row.inFeatures, row.starved(), row.module};
        return;
    }
    cell->routedTokens = std::max(cell->routedTokens, row.routedTokens);
    cell->samples = std::min(cell->samples, row.samples);
    cell->inFeatures = std::max(cell->inFeatures, row.inFeatures);
    cell->starved = cell->starved || row.starved();
    // What a click selects: the expert's first linear in the block's order (gate before up before down),
    // whatever order the log has them in (gpt-oss logs down_proj before gate_up_proj).
    if (analysis::moduleRank(row.module) < analysis::moduleRank(cell->module)) cell->module = row.module;
}

}  // namespace

ExpertTokenGrid ExpertTokenGrid::fromModuleLogs(const std::vector<pipeline::ModuleLog>& rows) {
    ExpertTokenGrid grid;
    const std::vector<ExpertRow> experts = expertRows(rows);
    for (const ExpertRow& e : experts) {
        grid.layers_ = std::max(grid.layers_, e.row->layer + 1);
        grid.experts_ = std::max(grid.experts_, e.expert + 1);
    }
    grid.cells_.resize(static_cast<std::size_t>(grid.layers_) * static_cast<std::size_t>(grid.experts_));
    for (const ExpertRow& e : experts)
        merge(grid.cells_[static_cast<std::size_t>(e.row->layer) * static_cast<std::size_t>(grid.experts_) +
                          static_cast<std::size_t>(e.expert)],
              *e.row);
    return grid;
}

ExpertTokenGrid ExpertTokenGrid::fromResult(const pipeline::JobResult& result) {
    std::vector<pipeline::ModuleLog> rows;
    for (const pipeline::MethodResult& m : result.methods) rows.insert(rows.end(), m.modules.begin(), m.modules.end());
    return fromModuleLogs(rows);
}

const ExpertTokens* ExpertTokenGrid::cell(int layer, int expert) const {
    if (layer < 0 || expert < 0 || layer >= layers_ || expert >= experts_) return nullptr;
    const auto& c =
        cells_[static_cast<std::size_t>(layer) * static_cast<std::size_t>(experts_) + static_cast<std::size_t>(expert)];
    return c ? &*c : nullptr;
}

int ExpertTokenGrid::starvedCount() const {
    return static_cast<int>(std::count_if(cells_.begin(), cells_.end(), [](const auto& c) { return c && c->starved; }));
}

std::int64_t ExpertTokenGrid::minTokens() const {
    std::int64_t lo = std::numeric_limits<std::int64_t>::max();
    for (const auto& c : cells_)
        if (c) lo = std::min(lo, c->routedTokens);
    return empty() ? 0 : lo;
}

std::int64_t ExpertTokenGrid::maxTokens() const {
    std::int64_t hi = 0;
    for (const auto& c : cells_)
        if (c) hi = std::max(hi, c->routedTokens);
    return hi;
}

}  // namespace qs::gui
