#include "qs/pipeline/mixed_precision_report.h"

#include <cmath>
#include <map>

#include "qs/pipeline/mixed_precision_rules.h"  // namesOf

namespace qs::pipeline {
namespace {

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

std::string allocationSummary(const SensitivityTable& table, const MixedAllocation& allocation) {
    std::vector<int> counts(table.candidates.size(), 0);
    int dense = 0;
    for (int c : allocation.choice) (c < 0 ? dense : counts[std::size_t(c)]) += 1;
    std::string out;
    for (std::size_t c = 0; c < counts.size(); ++c)
        if (counts[c] > 0)
            out += (out.empty() ? "" : ", ") + table.candidates[c].name + " ×" + std::to_string(counts[c]);
    if (dense > 0) out += (out.empty() ? "" : ", ") + std::string("dense ×") + std::to_string(dense);
    return out;
}

nlohmann::json toJson(const SensitivityTable& table, const MixedAllocation& allocation) {
    nlohmann::json methods = nlohmann::json::object(), dense = nlohmann::json::array();
    for (std::size_t g = 0; g < table.groups.size(); ++g)
        for (const auto& module : table.groups[g].modules) {
            const std::string name = moduleName(table.groups[g].layer, module);
            if (allocation.choice[g] < 0)
                dense.push_back(name);
            else
                methods[name] = table.candidates[std::size_t(allocation.choice[g])].name;
        }
    return {{"target_bpw", number(allocation.targetBpw)},
            {"bits_per_weight", number(allocation.bitsPerWeight)},
            {"predicted_kl", number(allocation.predictedKl)},
            {"summary", allocationSummary(table, allocation)},
            {"methods", std::move(methods)},
            {"dense", std::move(dense)}};
}

nlohmann::json frontierJson(const SensitivityTable& table, const std::vector<MixedAllocation>& frontier) {
    nlohmann::json candidates = nlohmann::json::array(), points = nlohmann::json::array();
    for (std::size_t c = 0; c < table.candidates.size(); ++c)
        candidates.push_back({{"method", table.candidates[c].name},
                              {"bits_per_weight", number(table.uniformBpw[c])},
                              {"measured_kl", number(table.uniformKl[c])},
                              {"predicted_kl", number(table.uniformPredictedKl(c))}});
    for (const auto& a : frontier) points.push_back(toJson(table, a));
    return {{"sensitivity", std::string(sensitivityName(table.measure))},
            {"kl_per_damage", number(table.klPerDamage)},
            {"candidates", std::move(candidates)},
            {"frontier", std::move(points)}};
}

nlohmann::json mixedPrecisionRecord(const MixedPrecisionRequest& request) {
    nlohmann::json record = {
        {"candidates", namesOf(request.candidates)}, {"overrides", request.overrides}, {"ignore", request.ignore}};
    if (!request.sensitivity.empty()) record["sensitivity"] = request.sensitivity;
    return record;
}

void recordMixedResult(nlohmann::json& record, const MethodResult& mixed, const nlohmann::json& allocation) {
    record["bits_per_weight"] = mixed.bitsPerWeight;
    record["measured_kl"] = mixed.kl.meanKld.value;
    if (allocation.is_null()) return;
    record["target_bpw"] = allocation.at("target_bpw");
    record["predicted_kl"] = allocation.at("predicted_kl");
    record["allocation"] = allocation;
}

}  // namespace qs::pipeline
