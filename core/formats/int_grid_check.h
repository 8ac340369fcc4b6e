#pragma once
// What the integer layouts (GPTQ, AWQ) need from a QuantizedLinear before they can pack it: unsigned
// codes with one (scale, zero) per output row and group, integer zeros in the code range, and
// scales that survive the F16 the consumers store them in. Each answer is a sentence for the user,
// or "" when the linear fits.
#include <string>

#include "qs/quant/quantized_linear.h"

namespace qs::formats::detail {

std::string intGridProblem(const quant::QuantizedLinear& q);

// Input columns per group as stored (the row's width for group size -1).
std::int64_t storedGroupSize(const quant::QuantizedLinear& q);

// "K=4100 is not a multiple of group size 128", or "" (group size -1 always fits).
std::string groupDivisionProblem(const quant::QuantizedLinear& q);

}  // namespace qs::formats::detail
