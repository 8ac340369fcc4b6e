#pragma once
// The CPU's GptqSolver: the damped factorization as one blocked Cholesky of J H J and one triangular
// inverse (upperCholeskyOfInverse), and the column loop by chunks of rows over the OpenMP threads,
// each block's trailing columns updated by one GEMM (the lazy batch update).
#include "qs/quant/gptq_solver.h"

namespace qs::quant {

class CpuGptqSolver final : public GptqSolver {
public:
    void takeHessian(const GptqProblem& problem, MatrixF&& h) override;
    bool factor(double lambda) override;
    double columnLoop(GptqProblem& problem, std::vector<std::uint8_t>& codes) override;

private:
    MatrixF h_;  // until a factorization succeeds
    MatrixF u_;  // the upper Cholesky factor of (H + λI)⁻¹
};

}  // namespace qs::quant
