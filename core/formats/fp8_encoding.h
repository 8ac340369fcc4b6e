#pragma once
// What the FP8 writers ("fp8", "ct-fp8-dynamic") share: the check that a QuantizedLinear holds E4M3
// codes with usable scales, and its `weight` tensor (F8_E4M3 [N, K], the codes as they are).
#include <string>

#include "qs/formats/linear_encoder.h"

namespace qs::formats::detail {

// "" when q holds E4M3 codes [rows * cols] and finite positive scales, else why not, for the user.
std::string fp8CodesProblem(const quant::QuantizedLinear& q);

bool fp8PerTensor(const quant::QuantizedLinear& q);   // one scale for the whole matrix
bool fp8PerChannel(const quant::QuantizedLinear& q);  // one scale per output row
bool fp8Blocks128(const quant::QuantizedLinear& q);   // 128 x 128 tiles (DeepSeek-V3)

EncodedTensor fp8WeightTensor(const std::string& prefix, const quant::QuantizedLinear& q);

}  // namespace qs::formats::detail
