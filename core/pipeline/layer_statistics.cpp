#include "qs/pipeline/layer_statistics.h"

#include <set>

#include "qs/error.h"

namespace qs::pipeline {

model::LinearInputHook LayerStatistics::hook() {
    return [this](const model::LinearInput& input) { add(input); };
}

void LayerStatistics::add(const model::LinearInput& input) {
    if (input.modules.empty()) return;
    auto found = inputs_.find(input.modules.front());
    std::shared_ptr<InputStatistics> stats;
    if (found == inputs_.end()) {
        stats = std::make_shared<InputStatistics>(input.x.cols());
        for (auto module : input.modules) inputs_.emplace(std::string(module), stats);
    } else {
        stats = found->second;
    }
    stats->hessian.add(input.x);
    stats->maxAbs = stats->maxAbs.cwiseMax(input.x.cwiseAbs().colwise().maxCoeff().transpose());
    finalized_.erase(stats.get());
}

const InputStatistics& LayerStatistics::input(std::string_view module) const {
    auto found = inputs_.find(module);
    if (found == inputs_.end()) throw Error("no calibration inputs were recorded for " + std::string(module));
    return *found->second;
}

const MatrixF& LayerStatistics::hessian(std::string_view module) {
    const InputStatistics& stats = input(module);
    auto cached = finalized_.find(&stats);
    if (cached == finalized_.end()) cached = finalized_.emplace(&stats, stats.hessian.finalize()).first;
    return cached->second;
}

std::size_t LayerStatistics::bytes() const {
    std::size_t total = 0;
    std::set<const InputStatistics*> counted;
    for (const auto& [name, stats] : inputs_) {
        if (!counted.insert(stats.get()).second) continue;
        const auto f = static_cast<std::size_t>(stats->hessian.features());
        total += f * f * (sizeof(double) + sizeof(float));
    }
    return total;
}

}  // namespace qs::pipeline
