#pragma once
// quant::quantizeTrellis with the Viterbi search on the device: the rotation and the group scales
// stay on the host (O(n log n) per group), the 2^L-state search runs one thread block per group.
#include "qs/quant/trellis.h"

namespace qs::gpu {

quant::QuantizedLinear cudaTrellis(const MatrixF& w, const quant::TrellisOptions& options);

}  // namespace qs::gpu
