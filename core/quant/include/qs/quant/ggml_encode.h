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

// Encodes `rows` rows of n elements (a row-major matrix [rows, n]; whole blocks per row) into
// rows * io::ggmlRowBytes(type, n) bytes at dst, the rows spread over the OpenMP threads. The same
// importance weights (n, or null) apply to every row, as llama.cpp's imatrix does to a tensor's rows.
// Each row's bytes are those of ggmlEncodeRow, whatever the thread count.
void ggmlEncodeRows(io::GgmlType type, const float* src, std::uint8_t* dst, std::int64_t rows, std::int64_t n,
                    const float* importance = nullptr);

}  // namespace qs::quant
