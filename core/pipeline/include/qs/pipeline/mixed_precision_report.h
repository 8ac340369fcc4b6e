#pragma once
// JSON and one-line forms of a mixed-precision frontier and allocation: what `compare --target-bpw
// --json` writes and quantscope_report.json records (the budget, the sensitivity measure, the method
// of every linear, predicted and, once quantized, measured KL).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/pipeline/mixed_precision_allocation.h"

namespace qs::pipeline {

// "gptq4 ×20, gptq8 ×8, dense ×0": how many fused groups each candidate got.
std::string allocationSummary(const SensitivityTable& table, const MixedAllocation& allocation);

// {target_bpw, bits_per_weight, predicted_kl, summary, methods: {"model.layers.0.self_attn.q_proj": "gptq4", ...}, dense: [...]}
nlohmann::json toJson(const SensitivityTable& table, const MixedAllocation& allocation);

// {sensitivity, kl_per_damage, candidates: [{method, bits_per_weight, measured_kl, predicted_kl}], frontier: [...]}
nlohmann::json frontierJson(const SensitivityTable& table, const std::vector<MixedAllocation>& frontier);

}  // namespace qs::pipeline
