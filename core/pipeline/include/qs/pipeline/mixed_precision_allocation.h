#pragma once
// Allocation of a method per fused group of linears under a bits-per-weight budget, from a
// measurement pass (mixed_precision_measure.h) and the user's rules (mixed_precision_rules.h), by the
// exact multiple-choice knapsack of qs/quant/bit_allocation.h minimising the predicted KL.
//
// Units the allocator chooses for: under OutputError each fused group; under LayerKl the free groups
// of one layer together (its KL was measured for the whole layer). A group the rules fix is a unit
// with one option; a group they keep dense is left out, and the bits per weight are over the
// quantized linears (as MethodResult::bitsPerWeight), so a dense linear does not spend the budget.
// Only the allowed candidates (--candidates) are offered to free units; overrides may name others
// (the measurement pass measured them too).
#include <string>
#include <vector>

#include "qs/pipeline/mixed_methods.h"
#include "qs/pipeline/mixed_precision_measure.h"
#include "qs/pipeline/mixed_precision_rules.h"
#include "qs/quant/bit_allocation.h"

namespace qs::pipeline {

struct MixedAllocation {
    double targetBpw = 0.0;
    double bitsPerWeight = 0.0;  // what the allocation spends (≤ target)
    double predictedKl = 0.0;
    std::vector<int> choice;  // per table group: the candidate's index, -1 for a dense group
};

class MixedPrecisionPlanner {
public:
    // `table` must outlive the planner (it is read, not copied). Throws qs::Error: an allowed name that is not a measured candidate, a rule that matches no
    // linear, a rule that covers part of a fused group (naming the module), a rule's method not measured.
    MixedPrecisionPlanner(const SensitivityTable& table, const ModuleRules& rules,
                          const std::vector<std::string>& allowed);

    double cheapestBpw() const { return cheapest_; }
    double richestBpw() const { return richest_; }
    // Throws qs::Error for a budget below the cheapest allocation.
    MixedAllocation at(double targetBpw) const;
    // One allocation per distinct choice over `points` budgets from the cheapest to the richest, plus
    // each allowed candidate's uniform bits per weight; by increasing bits per weight.
    std::vector<MixedAllocation> frontier(int points = 48) const;
    // The allocation as a Job's per-linear methods.
    MixedMethods methods(const MixedAllocation& allocation, const std::string& name) const;

    const SensitivityTable& table() const { return table_; }

private:
    MixedAllocation fromChoice(double target, const quant::Allocation& a) const;

    const SensitivityTable& table_;
    std::vector<int> allowed_;  // candidate indices offered to free units
    std::vector<quant::AllocationLayer> units_;
    std::vector<std::vector<std::size_t>> unitGroups_;  // per unit: its table groups
    std::vector<std::vector<int>> unitCandidates_;      // per unit: the candidate of each option
    std::size_t groupCount_ = 0;
    double cheapest_ = 0.0, richest_ = 0.0;
};

}  // namespace qs::pipeline
