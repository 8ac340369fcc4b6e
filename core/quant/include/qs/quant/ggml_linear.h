#pragma once
// A linear layer quantized to one ggml type (a GGUF method's choice for that tensor): the encoded
// blocks are the result, so the KL QuantScope measures is that of the bytes a GGUF file will hold.
#include "qs/io/ggml_type.h"
#include "qs/matrix.h"
#include "qs/quant/quantized_linear.h"

namespace qs::quant {

// The calibration inputs of a linear as llama.cpp's imatrix keeps them: Σx² per input column over
// `count` input vectors. Empty sums: no calibration.
struct InputImportance {
    std::vector<float> sumSquares;
    std::int64_t count = 0;
};

// W [rows, cols] encoded row by row into `type` (any type ggmlEncodes, F32/F16/BF16 included; cols
// whole blocks of it). With importance, each element's squared error is weighted by Σx²/count of its
// column, as llama-quantize --imatrix weighs it; the sums are kept in the result (inputSumSquares).
// Throws qs::Error for a type it cannot encode, rows that are not whole blocks, or importance of
// the wrong length.
QuantizedLinear quantizeGgml(const MatrixF& w, io::GgmlType type, const InputImportance& importance = {});

}  // namespace qs::quant
