#include "experts/expert_error_grid.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "qs/analysis/layer_overview.h"

#include "experts/expert_path.h"

namespace qs::gui {

ExpertErrorGrid ExpertErrorGrid::fromModuleLogs(const std::vector<pipeline::ModuleLog>& rows) {
    struct Found {
        const pipeline::ModuleLog* row;
        int expert;
    };
    std::vector<Found> found;
    ExpertErrorGrid grid;
    for (const pipeline::ModuleLog& row : rows) {
        const auto path = parseExpertPath(row.module);
        if (row.layer < 0 || !path || path->expert < 0 || !std::isfinite(row.outputError)) continue;
        found.push_back({&row, path->expert});
        grid.layers_ = std::max(grid.layers_, row.layer + 1);
        grid.experts_ = std::max(grid.experts_, path->expert + 1);
    }
    grid.cells_.resize(static_cast<std::size_t>(grid.layers_) * static_cast<std::size_t>(grid.experts_));
    for (const Found& f : found) {
        ExpertError& c = grid.cells_[static_cast<std::size_t>(f.row->layer) * static_cast<std::size_t>(grid.experts_) +
                                     static_cast<std::size_t>(f.expert)];
        if (c.linears == 0 || analysis::moduleRank(f.row->module) < analysis::moduleRank(c.module))
            c.module = f.row->module;       // gate before up before down, whatever order the log has them in
        c.meanError += f.row->outputError;  // a sum until every linear is in
        c.maxError = std::max(c.maxError, f.row->outputError);
        ++c.linears;
    }
    for (ExpertError& c : grid.cells_)
        if (c.linears > 0) c.meanError /= c.linears;
    return grid;
}

const ExpertError* ExpertErrorGrid::cell(int layer, int expert) const {
    if (layer < 0 || expert < 0 || layer >= layers_ || expert >= experts_) return nullptr;
    const ExpertError& c =
        cells_[static_cast<std::size_t>(layer) * static_cast<std::size_t>(experts_) + static_cast<std::size_t>(expert)];
    return c.linears > 0 ? &c : nullptr;
}

double ExpertErrorGrid::minError() const {
    double lo = std::numeric_limits<double>::infinity();
    for (const ExpertError& c : cells_)
        if (c.linears > 0) lo = std::min(lo, c.meanError);
    return std::isfinite(lo) ? lo : 0.0;
}

double ExpertErrorGrid::maxError() const {
    double hi = 0.0;
    for (const ExpertError& c : cells_)
        if (c.linears > 0) hi = std::max(hi, c.meanError);
    return hi;
}

}  // namespace qs::gui
