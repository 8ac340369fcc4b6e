#pragma once
// The mixed-precision options of compare and quantize: --target-bpw (allocate a method per fused group
// of linears under a bits-per-weight budget), --sensitivity group-kl|layer-kl|output-error (how each
// candidate's damage is measured), --override REGEX=METHOD and --ignore REGEX (applied first).
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "qs/model/model_config.h"
#include "qs/pipeline/mixed_precision_allocation.h"
#include "qs/pipeline/mixed_precision_rules.h"

namespace qs::cli {

struct MixedOptions {
    std::optional<double> targetBpw;
    std::string sensitivity =
        "group-kl";  // the only measure whose allocation beats a uniform method at its own bits (bench/README.md)
    std::vector<std::string> overrides;
    std::vector<std::string> ignore;

    bool any() const { return targetBpw || !overrides.empty() || !ignore.empty(); }
};

void addMixedOptions(CLI::App& cmd, MixedOptions& options);
// Throws qs::Error naming the bad --override.
// `tensorPrefix`: the checkpoint's decoder prefix (arch.tensorPrefix), which the rules' names carry.
pipeline::ModuleRules rulesFrom(const MixedOptions& options, int groupSize, const std::string& tensorPrefix);
using pipeline::measuredMethods;
using pipeline::namesOf;

// Refuses (qs::Error, one line) a budget below the cheapest allocation before the measurement pass,
// from the candidates' bits alone (bitsOnlyTable: within 0.01 bit of the measured ones).
void refuseUnreachableBudget(double targetBpw, const model::ModelConfig& config,
                             const std::vector<pipeline::MethodSpec>& candidates, const pipeline::ModuleRules& rules);

// The frontier as a table, the allocation at the budget marked.
void printFrontier(const pipeline::SensitivityTable& table, const std::vector<pipeline::MixedAllocation>& frontier,
                   const pipeline::MixedAllocation& atBudget, std::ostream& out);

// The quantized allocation's measured KL beside its predicted KL, and the uniform candidates' rows.
void printMeasuredAllocation(const pipeline::SensitivityTable& table, const pipeline::MixedAllocation& atBudget,
                             const pipeline::MethodResult& measured, std::ostream& out);

}  // namespace qs::cli
