#pragma once
// RMSNorm as Llama/Qwen apply it: x / sqrt(mean(x²) + eps) * weight, in f32, row by row.
#include "qs/matrix.h"

namespace qs::model {

// Normalizes each row of x [T, n] in place with weight [n].
void rmsNormInPlace(MatrixF& x, const VectorF& weight, double eps);
MatrixF rmsNorm(const MatrixF& x, const VectorF& weight, double eps);

// Qwen3's q/k norm: every head (a block of weight.size() columns) of every row is normalized alone.
void rmsNormHeadsInPlace(MatrixF& x, const VectorF& weight, double eps);

}  // namespace qs::model
