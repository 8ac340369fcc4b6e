#pragma once
// Per-linear settings under an average bits-per-weight budget (EXL2-style mixing): each linear has
// candidate settings with a measured error each (e.g. its output error at 3, 4, 5 bits, or RTN vs
// GPTQ); pick one per linear so that Σ params·bpw ≤ target·Σ params and Σ params·error is smallest
// (errors weighted by parameter count, as the lesson's example 7 scores them; docs/reference-algorithms.md).
//   allocateGreedy: the lesson's rule. Every linear starts at its cheapest setting; repeatedly take
//     the single upgrade to a linear's next setting (in bpw order) with the largest error decrease
//     per extra bit that still fits the budget, until none fits or none helps.
//   allocateExact: a multiple-choice knapsack solved by dynamic programming over the budget in
//     integer units (exact when every params·bpw is a multiple of the unit, which it finds itself for
//     bpw on a 1/1024-bit grid; otherwise costs are rounded up, so the answer stays within the
//     budget and is optimal for the rounded costs), with the Lagrangian relaxation's bound reported.
#include <cstdint>
#include <string>
#include <vector>

namespace qs::quant {

struct AllocationOption {
    double bitsPerWeight = 0.0;
    double error = 0.0;  // per weight; the total weighs it by the linear's parameter count
    std::string label;   // e.g. "gptq 4-bit g128"
};

struct AllocationLayer {
    std::string name;
    std::int64_t params = 0;
    std::vector<AllocationOption> options;
};

struct Allocation {
    std::vector<int> choice;  // index into each layer's options
    double averageBpw = 0.0;  // Σ params·bpw / Σ params
    double error = 0.0;       // Σ params·error / Σ params
    double lowerBound = 0.0;  // allocateExact: the Lagrangian bound (no allocation can beat it)
    bool exact = false;       // allocateExact: true when the DP's unit represented every cost exactly
};

Allocation allocateGreedy(const std::vector<AllocationLayer>& layers, double targetBpw);
Allocation allocateExact(const std::vector<AllocationLayer>& layers, double targetBpw,
                         std::int64_t maxStates = 200'000'000);

// Scores a given choice (average bpw and weighted error), e.g. a uniform setting.
Allocation evaluateAllocation(const std::vector<AllocationLayer>& layers, const std::vector<int>& choice);

}  // namespace qs::quant
