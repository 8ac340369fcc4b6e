#pragma once
// JSON and one-line forms of a mixed-precision frontier and allocation: what `compare --target-bpw
// --json` writes and quantscope_report.json records (the budget, the sensitivity measure, the method
// of every linear, predicted and, once quantized, measured KL).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/pipeline/job_result.h"
#include "qs/pipeline/method_spec.h"
#include "qs/pipeline/mixed_precision_allocation.h"

namespace qs::pipeline {

// "gptq4 ×20, gptq8 ×8, dense ×0": how many fused groups each candidate got.
std::string allocationSummary(const SensitivityTable& table, const MixedAllocation& allocation);

// {target_bpw, bits_per_weight, predicted_kl, summary, methods: {"model.layers.0.self_attn.q_proj": "gptq4", ...}, dense: [...]}
nlohmann::json toJson(const SensitivityTable& table, const MixedAllocation& allocation);

// {sensitivity, kl_per_damage, candidates: [{method, bits_per_weight, measured_kl, predicted_kl}], frontier: [...]}
nlohmann::json frontierJson(const SensitivityTable& table, const std::vector<MixedAllocation>& frontier);

// What a mix of methods was asked for, as its report records it.
struct MixedPrecisionRequest {
    std::vector<MethodSpec> candidates;
    std::vector<std::string> overrides;  // as typed, "REGEX=METHOD"
    std::vector<std::string> ignore;     // as typed
    std::string sensitivity;             // the budget's damage measure; "" for rules without a budget
};

// quantscope_report.json's "mixed_precision" record, the same from the CLI's quantize and the GUI's
// Bit budget page: {candidates, overrides, ignore[, sensitivity]}, known before anything is quantized.
nlohmann::json mixedPrecisionRecord(const MixedPrecisionRequest& request);

// The record completed with what the quantized mix measured (bits_per_weight, measured_kl) and, under
// a budget, the allocation it ran (toJson's; its target_bpw and predicted_kl also at the top). An
// `allocation` of null: rules without a budget.
void recordMixedResult(nlohmann::json& record, const MethodResult& mixed, const nlohmann::json& allocation);

}  // namespace qs::pipeline
