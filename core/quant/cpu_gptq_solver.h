#pragma once
// The CPU's GptqSolver: the damped factorization as one blocked Cholesky of J H J, read as H's upper
// factor M (H + λI = M Mᵀ, upperFactor), and the column loop with M by chunks of rows over the OpenMP
// threads, each block brought up to date by one GEMM over the columns done (left-looking). No inverse is
// formed. With a correction towards the full-precision inputs (GPTAQ, qs/quant/gptaq.h) the same loop
// quantizes each column from its weights plus Σ v_i P_ij of the columns before it.
#include "qs/quant/gptq_solver.h"

namespace qs::quant {

class CpuGptqSolver final : public GptqSolver {
public:
    void takeHessian(const GptqProblem& problem, MatrixF&& h) override;
    bool factor(double lambda) override;
    double columnLoop(GptqProblem& problem, std::vector<std::uint8_t>& codes) override;

    // GPTAQ: D = 2 ΔXᵀ X̃ / n in the original column order (kept by reference until takeHessian, which
    // copies it in visiting order) and alpha; the column loop forms P = alpha triu₁(D Uᵀ) U in the
    // copy's memory.
    void correctTowardsFullPrecision(const MatrixF& dxxt, double alpha);

private:
    // J H J in H's own buffer until a factorization succeeds. The factorization writes only its lower
    // triangle, so a damping retry rebuilds it from the strict upper one and the saved diagonal: no copy
    // of H (for a 14336-wide down_proj, 822 MB) is kept beside it.
    MatrixF h_;
    Eigen::VectorXf diagonal_;       // J H J's diagonal, undamped; empty until the first factor()
    MatrixF m_;                      // upper triangular, H + λI = M Mᵀ (U = M⁻¹)
    const MatrixF* dxxt_ = nullptr;  // GPTAQ's D, original order; null: plain GPTQ
    double alpha_ = 0.0;
    MatrixF p_;  // GPTAQ: D in visiting order, then P
};

}  // namespace qs::quant
