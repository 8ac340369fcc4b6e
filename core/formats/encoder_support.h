#pragma once
// What the 4-bit and trellis encoders share beyond tensor_encoding.h: the refusal guard of encode(),
// the shape in words for refusals, and torch's name of the source dtype for configs.
#include <string>

#include "qs/formats/linear_encoder.h"

namespace qs::formats::detail {

// Throws qs::Error "<prefix>: the <encoder> layout cannot store it: <why>" when encoder.refusal(q) is not empty.
void requireEncodable(const LinearEncoder& encoder, const std::string& prefix, const quant::QuantizedLinear& q);

std::string shapeOf(const quant::QuantizedLinear& q);  // "[rows, cols]"

// The dtype as torch names it without "torch." ("bfloat16", "float16", "float32").
std::string torchDTypeName(io::DType dtype);

}  // namespace qs::formats::detail
