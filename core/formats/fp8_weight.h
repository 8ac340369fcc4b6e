#pragma once
// An F8_E4M3 weight [N, K] times a broadcast scale grid: W = e4m3(code) * scale (scales multiply,
// whatever the tensor is called: weight_scale_inv, weight_scale). Shared by the fp8,
// compressed-tensors float-quantized and ModelOpt FP8 layouts.
#include <string>

#include "qs/formats/linear_codec.h"

#include "scale_grid.h"

namespace qs::formats::detail {

// Checks dtype F8_E4M3 and rank 2.
void requireFp8Weight(const io::Checkpoint& checkpoint, const io::TensorView& weight);

DecodedLinear decodeScaledFp8(const io::Checkpoint& checkpoint, const LinearRef& ref, const io::TensorView& weight,
                              ScaleGrid grid);

LayerQuantInfo describeScaledFp8(const LinearRef& ref, std::string codec, std::int64_t rows, std::int64_t cols,
                                 const ScaleGrid& grid);

}  // namespace qs::formats::detail
