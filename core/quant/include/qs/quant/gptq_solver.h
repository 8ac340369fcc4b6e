#pragma once
// The seam between GPTQ's frame and the machine that runs its arithmetic. quantizeGptq (gptq.cpp) owns
// what every backend shares — the checks, the prepared problem (dead inputs, act-order, static grids),
// the damping schedule, the result's header, the transpose of the codes, g_idx and the error measure —
// and asks a GptqSolver for the two steps that run where the numbers live: the damped factorization of
// H and the blocked column loop. The CPU's solver is in core (cpu_gptq_solver.cpp), the CUDA backend's
// in gpu/.
#include <cstdint>
#include <vector>

#include "qs/matrix.h"

namespace qs::quant {

struct GptqOptions;

// What the column loop starts from, built by quantizeGptq; "visiting order" is the order in which
// the loop quantizes the columns (act-order: by decreasing H_ii, else the original order).
struct GptqProblem {
    const GptqOptions& options;
    MatrixF w{};              // [rows, cols] in visiting order, dead columns zeroed; the solver may
                              // correct it in place, or free it once it holds its own copy
    std::vector<int> perm{};  // visiting position -> original column
    int groupCols = 0;        // columns per group (cols when one group per row)
    int groups = 0;
    // [rows, groups]. Static groups: every group's grid, from the uncorrected weights in the original
    // column order, read only (the loop reads group perm[k] / groupCols). Otherwise the loop writes
    // a group's grid when it reaches the group's first visiting column.
    MatrixF scales{};
    MatrixF zeros{};
};

class GptqSolver {
public:
    virtual ~GptqSolver() = default;

    // The first call of a run: takes H in visiting order ([cols, cols], dead inputs' diagonal set to 1,
    // undamped) and keeps it, or its own copy of it, for the factorizations. `problem` is the one
    // columnLoop will get: a device checks here that the run fits (a qs::Error when it does not).
    virtual void takeHessian(const GptqProblem& problem, MatrixF&& h) = 0;
    // Factors H + λI and keeps what columnLoop needs of it (the CPU: M upper with H + λI = M Mᵀ; the
    // CUDA device: U = M⁻¹, the upper Cholesky factor of the inverse, H⁻¹ = UᵀU), freeing H; false, with
    // H kept for a retry at a larger λ, when H + λI is not positive definite.
    virtual bool factor(double lambda) = 0;
    // The blocked column loop over `problem` with the last successful factor(): writes the
    // codes ([cols][rows], visiting order: column k's codes at k * rows) into `codes` and, unless the
    // groups are static, problem.scales / problem.zeros. Returns Σ ½ eᵢ² over every weight, with
    // e = (w - q) / U_kk, w the corrected weight (GPTQModel's loss before dividing by the samples). Polls
    // options.cancel.
    virtual double columnLoop(GptqProblem& problem, std::vector<std::uint8_t>& codes) = 0;
};

}  // namespace qs::quant
