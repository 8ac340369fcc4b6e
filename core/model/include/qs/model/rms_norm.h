#pragma once
// RMSNorm as Llama/Qwen apply it: x / sqrt(mean(x²) + eps) * weight, in f32, row by row; with
// `offset` 1, Gemma's x / sqrt(mean(x²) + eps) * (1 + weight) (Architecture::normOffset).
#include "qs/matrix.h"

namespace qs::model {

// Normalizes each row of x [T, n] in place with weight [n].
void rmsNormInPlace(MatrixF& x, const VectorF& weight, double eps, float offset = 0.0f);
MatrixF rmsNorm(const MatrixF& x, const VectorF& weight, double eps, float offset = 0.0f);

// Qwen3's q/k norm: every head (a block of weight.size() columns) of every row is normalized alone.
void rmsNormHeadsInPlace(MatrixF& x, const VectorF& weight, double eps, float offset = 0.0f);

}  // namespace qs::model
