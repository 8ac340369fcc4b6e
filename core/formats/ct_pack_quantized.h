#pragma once
// compressed-tensors pack-quantized (docs/formats/compressed-tensors.md) for one integer-coded linear, the int part of
// "ct-mixed":
//   <p>.weight_packed      I32 [N, ceil(K*b/32)]  codes (the unsigned fields: signed value + 2^(b-1)),
//                          element i of a row at bits [i*b, i*b+b) of the row's little-endian word stream
//   <p>.weight_scale       F32 [N, groups] (channel: [N, 1])  multiplied
//   <p>.weight_shape       I64 [2] = [N, K]
//   <p>.weight_zero_point  I32 [ceil(N*b/32), groups]  asymmetric only: the unsigned zero fields,
//                          packed along N the same way
//   <p>.weight_g_idx       I32 [K]  act-order only
// W = (field - zero field) * scale; symmetric grids have the fixed zero 2^(b-1) and store none.
// Scales are stored as F32, the values QuantScope computed; vLLM and compressed-tensors cast them to
// the model dtype when they load (the reference stores them in the weight dtype).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/formats/linear_encoder.h"

namespace qs::formats::detail {

// "" when q is an integer grid this layout holds (2, 4 or 8 bits, whose packing every
// compressed-tensors release agrees on; one scale per row and group); else why not.
std::string ctPackQuantizedProblem(const quant::QuantizedLinear& q);
std::vector<EncodedTensor> encodeCtPackQuantized(const std::string& prefix, const quant::QuantizedLinear& q);
// The weights' QuantizationArgs: num_bits, type int, symmetric, strategy group/channel, group_size, actorder.
nlohmann::json ctPackQuantizedArgs(const quant::QuantizedLinear& q);

}  // namespace qs::formats::detail
