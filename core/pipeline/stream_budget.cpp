#include "stream_budget.h"

#include <numeric>

namespace qs::pipeline {

std::vector<TravellingStream> travellingStreams(const JobPlan& plan, int hiddenSize) {
    const std::uint64_t perToken = std::uint64_t(hiddenSize) * sizeof(float);
    const std::uint64_t calibration = tokenCount(plan.calibration) * perToken,
                        evaluation = tokenCount(plan.evaluation) * perToken;
    const bool calibrating = !plan.calibration.empty();
    bool kvCache = false, baseStatistics = false;
    std::vector<bool> own;  // per method, then per mix: a calibration stream of its own
    for (const auto& m : plan.methods) {
        own.push_back(plan.trueSequential && m.sequential() && calibrating);
        kvCache = kvCache || m.kvCacheFp8;
    }
    for (const auto& mix : plan.mixed) own.push_back(plan.trueSequential && mix.sequential() && calibrating);
    for (bool o : own) baseStatistics = baseStatistics || (!o && calibrating);
    baseStatistics = baseStatistics || kvCache;
    // GPTAQ pairs its own stream's inputs with the original's: the original's travels too.
    for (std::size_t m = 0; m < plan.methods.size(); ++m)
        baseStatistics = baseStatistics || (own[m] && plan.methods[m].gptaq);

    std::vector<TravellingStream> out;
    if (baseStatistics) out.push_back({"calibration", calibration});
    out.push_back({"evaluation", evaluation});
    if (kvCache) out.push_back({"kv_evaluation", evaluation});
    for (std::size_t m = 0; m < own.size(); ++m) {
        if (own[m]) out.push_back({"s" + std::to_string(m) + ".calibration", calibration});
        out.push_back({"s" + std::to_string(m) + ".evaluation", evaluation});
    }
    return out;
}

std::set<std::string> spilledStreams(const std::vector<TravellingStream>& streams, std::uint64_t budget) {
    std::set<std::string> spilled;
    for (const auto& s : streams) {
        if (s.bytes <= budget)
            budget -= s.bytes;
        else
            spilled.insert(s.name);
    }
    return spilled;
}

std::uint64_t totalBytes(const std::vector<TravellingStream>& streams) {
    return std::accumulate(streams.begin(), streams.end(), std::uint64_t{0},
                           [](std::uint64_t sum, const TravellingStream& s) { return sum + s.bytes; });
}

}  // namespace qs::pipeline
