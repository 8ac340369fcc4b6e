#pragma once
// Quantization to ggml's block types (the element types of GGUF, qs/io/ggml_type.h), as
// llama.cpp's quantize_* functions do, with llama.cpp's importance weights (its "imatrix").
#include <cstdint>

#include "qs/io/ggml_type.h"

namespace qs::quant {

// Whether ggmlEncodeRow can produce `type`.
bool ggmlEncodes(io::GgmlType type);

// Encodes n elements (whole blocks) of src into `type` at dst (io::ggmlRowBytes(type, n) bytes).
// `importance` (n non-negative weights, or null) weighs each element's squared error, as llama.cpp's
// imatrix does: the diagonal of the Hessian, Σx² per input column. Throws qs::Error for a type it does
// not encode.
void ggmlEncodeRow(io::GgmlType type, const float* src, std::uint8_t* dst, std::int64_t n,
                   const float* importance = nullptr);

}  // namespace qs::quant
