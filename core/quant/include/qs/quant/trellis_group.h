#pragma once
// The two pieces of trellis quantization that every backend must do identically: the option checks
// and a group's scale (its RMS as the f16 the format stores). core/quant/trellis.cpp defines them;
// the CUDA backend calls the same functions so that its groups are scaled bit for bit alike.
#include "qs/matrix.h"
#include "qs/quant/trellis.h"

namespace qs::quant {

// Throws qs::Error for L, K or a group size quantizeTrellis cannot use on w.
void checkTrellisOptions(const MatrixF& w, const TrellisOptions& options);

// RMS of x[0, n), floored at 1e-12, rounded to f16.
float trellisGroupScale(const float* x, int n);

}  // namespace qs::quant
