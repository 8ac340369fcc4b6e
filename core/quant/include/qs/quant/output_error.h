#pragma once
// The damage a quantized weight Q does to a layer's output on calibration inputs X [n, in]:
//   mse      = mean over tokens and outputs of ((W - Q) x)^2          (the reference "output mse")
//   relative = ||(W - Q) Xᵀ||_F / ||W Xᵀ||_F
// Both can be had from X directly or, without X, from H = 2 XᵀX / n of the same inputs, because
// Σ_tokens ((W - Q) x)^2 / n = ½ tr((W - Q) H (W - Q)ᵀ).
#include <limits>

#include "qs/matrix.h"

namespace qs::quant {

struct OutputError {
    double relative = std::numeric_limits<double>::quiet_NaN();
    double mse = std::numeric_limits<double>::quiet_NaN();
};

OutputError outputErrorFromInputs(const MatrixF& w, const MatrixF& q, const Eigen::Ref<const MatrixF>& x);
OutputError outputErrorFromHessian(const MatrixF& w, const MatrixF& q, const MatrixF& h);

// Σ_rows ½ d H dᵀ (one GEMM D·H, f64 sum): the squared output error summed over outputs, per token.
double hessianQuadratic(const Eigen::Ref<const MatrixF>& d, const Eigen::Ref<const MatrixF>& h);

// Same, per row of d: ½ d_r H d_rᵀ.
Eigen::VectorXd hessianQuadraticRows(const Eigen::Ref<const MatrixF>& d, const Eigen::Ref<const MatrixF>& h);

}  // namespace qs::quant
