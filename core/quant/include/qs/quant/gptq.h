#pragma once
// GPTQ (Frantar et al., 2022) as AutoGPTQ / GPTQModel run it: columns are quantized one at a time
// and the error of each is pushed onto the columns not yet quantized through the upper Cholesky
// factor of H⁻¹ (H = 2 XᵀX / n), 128 columns at a time ("lazy batch updates": inside a block the
// updates are rank-one, after it one GEMM updates the rest of the matrix). The CPU's solver works with
// H's own upper factor M (H = M Mᵀ, U = M⁻¹) and forms no inverse: the same corrections, summed per
// column (cpu_gptq_solver.cpp).
//
// Details that change the result, each as the references do it:
//  - dead inputs (H_ii == 0) get H_ii = 1 and a zero weight column;
//  - damping dampPercent * mean(diag H) on the diagonal, raised by dampIncrement until the Cholesky
//    factorization succeeds (GPTQModel's damp_auto_increment);
//  - a group's (scale, zero) come from the weights as corrected so far, when the loop reaches the
//    group's first column (AutoGPTQ's find_params, GridRule::AutoGptq by default);
//  - act-order (desc_act) visits columns by decreasing H_ii; g_idx[k] = invperm[k] / groupSize;
//    staticGroups fixes every group's grid from the uncorrected weights in the original column
//    order before the loop, and g_idx = k / groupSize.
// The result's gptqLoss is GPTQModel's logged "loss": Σ (w - q)² / d² / 2 over all weights (d the
// diagonal of the Cholesky factor when the column was quantized), divided by `samples`.
// Σ (w - q)² / d² / 2 is also exactly ½ tr(D H_damped Dᵀ), so outputMse / outputError come from it
// without another pass over the inputs (the damping term ½ λ ||D||² is subtracted).
#include <cstdint>

#include "qs/cancel_token.h"
#include "qs/matrix.h"
#include "qs/quant/gptq_solver.h"
#include "qs/quant/quantized_linear.h"
#include "qs/quant/rtn.h"

namespace qs::quant {

struct GptqOptions {
    int bits = 4;         // 2, 3, 4, 8 (any 2..8 works)
    int groupSize = 128;  // -1: one group per row
    double dampPercent = 0.01;
    double dampIncrement = 0.0025;  // added to dampPercent after each failed Cholesky, up to 1
    bool actOrder = false;
    bool staticGroups = false;
    bool sym = true;
    int blockSize = 128;
    GridRule rule = GridRule::AutoGptq;
    double samples = 0;        // GPTQModel's nsamples for the loss; 0 = report the plain sum
    bool measureError = true;  // outputError / outputMse (one extra GEMM W·H for ||W X||)
    // Polled between blocks of 128 columns (a large layer takes seconds): qs::Cancelled when set.
    const qs::CancelToken* cancel = nullptr;
};

// w [out, in] and h [in, in] = 2 XᵀX / n.
QuantizedLinear quantizeGptq(const MatrixF& w, const MatrixF& h, const GptqOptions& options = {});
// The same result, bit for bit, working in the memory of an H the caller gives up: no copy of H is
// made, and H is freed once its Cholesky factorization succeeds, so at most two [in, in] f32 matrices
// are alive at a time (the const& version adds the caller's H: a 14336-wide layer's 0.8 GB).
QuantizedLinear quantizeGptq(const MatrixF& w, MatrixF&& h, const GptqOptions& options = {});
// The same frame with `solver` factoring H and running the column loop (gptq_solver.h): the CUDA
// backend's device plugs in here. The two overloads above use the CPU's solver.
QuantizedLinear quantizeGptq(const MatrixF& w, MatrixF&& h, const GptqOptions& options, GptqSolver& solver);

// The upper triangular M with H = M Mᵀ, computed as J·L·J with L the lower Cholesky factor of J H J
// (J reverses the order). GPTQ's U, the upper Cholesky factor of H⁻¹ (H⁻¹ = UᵀU), is M⁻¹: the CPU's
// column loop works with M and forms no inverse. False when H is not positive definite. Threaded by
// tiles, each computed by one thread: the bits do not depend on the team's size.
bool upperFactor(const MatrixF& h, MatrixF& m);

}  // namespace qs::quant
