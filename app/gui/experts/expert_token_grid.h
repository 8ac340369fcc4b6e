#pragma once
// The tokens the router sent each expert, as the job's module log reported them: a layer × expert grid
// for the Results page's heat map. One value per expert: its linears (gate, up, down) all see the
// expert's tokens, so their rows agree and the largest is taken (never their sum). An expert is starved
// when any of its linears was (pipeline::ModuleLog::starved: fewer calibration rows than inputs).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "qs/pipeline/job_result.h"

namespace qs::gui {

struct ExpertTokens {
    std::int64_t routedTokens = 0;
    std::int64_t samples = 0;     // the fewest calibration rows of its linears (its Hessians')
    std::int64_t inFeatures = 0;  // the widest input of its linears
    bool starved = false;
    std::string module;  // its first linear ("mlp.experts.3.gate_proj", analysis::moduleRank): what a click selects
};

class ExpertTokenGrid {
public:
    // Every expert row of every method (methods share the calibration, so their counts agree).
    static ExpertTokenGrid fromModuleLogs(const std::vector<pipeline::ModuleLog>& rows);
    static ExpertTokenGrid fromResult(const pipeline::JobResult& result);

    bool empty() const { return experts_ == 0; }
    int layers() const { return layers_; }    // rows: 0 .. the deepest layer with experts (dense layers stay empty)
    int experts() const { return experts_; }  // columns: 0 .. the highest expert index
    // Null where the log has no row for that layer and expert (a dense layer).
    const ExpertTokens* cell(int layer, int expert) const;
    int starvedCount() const;
    std::int64_t minTokens() const;
    std::int64_t maxTokens() const;

private:
    int layers_ = 0;
    int experts_ = 0;
    std::vector<std::optional<ExpertTokens>> cells_;  // [layer * experts_ + expert]
};

}  // namespace qs::gui
