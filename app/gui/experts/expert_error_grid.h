#pragma once
// The damage each expert took, from one method's module log: a layer × expert grid of the relative output
// error of its linears on the calibration inputs (their mean: gate, up and down weigh alike), for the
// Results page's "Error per expert" map beside the tokens the router sent each expert. Linears without an
// output error (no calibration) are left out; an expert with none has no cell.
#include <string>
#include <vector>

#include "qs/pipeline/job_result.h"

namespace qs::gui {

struct ExpertError {
    double meanError = 0.0;  // over its linears with an output error
    double maxError = 0.0;
    int linears = 0;
    std::string module;  // its first linear (analysis::moduleRank): what a click selects
};

class ExpertErrorGrid {
public:
    static ExpertErrorGrid fromModuleLogs(const std::vector<pipeline::ModuleLog>& rows);

    bool empty() const { return experts_ == 0; }
    int layers() const { return layers_; }
    int experts() const { return experts_; }
    const ExpertError* cell(int layer, int expert) const;  // null: no expert there, or no error logged
    double minError() const;                               // over the cells' means
    double maxError() const;

private:
    int layers_ = 0;
    int experts_ = 0;
    std::vector<ExpertError> cells_;  // [layer * experts_ + expert]; linears == 0: none
};

}  // namespace qs::gui
