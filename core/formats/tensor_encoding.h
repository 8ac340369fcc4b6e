#pragma once
// Building EncodedTensors: packed int32 words, floats converted to a stored dtype, raw byte codes.
// Shared by the encoders; every tensor is little-endian and row-major as safetensors stores it.
#include <cstdint>
#include <string>
#include <vector>

#include "qs/formats/linear_encoder.h"
#include "qs/matrix.h"

namespace qs::formats::detail {

// I32 tensor of the given words' bit patterns.
EncodedTensor wordTensor(std::string name, std::vector<std::int64_t> shape, const std::vector<std::uint32_t>& words);
// `values` (row-major, as many as the shape holds) rounded to `dtype` (F32, F16, BF16).
EncodedTensor floatTensor(std::string name, io::DType dtype, std::vector<std::int64_t> shape, const float* values);
// A matrix in its own row-major order, rounded to `dtype`; the shape may add or drop unit dimensions.
EncodedTensor matrixTensor(std::string name, io::DType dtype, std::vector<std::int64_t> shape, const MatrixF& m);
// Bytes stored as they are (F8_E4M3 or U8 codes).
EncodedTensor byteTensor(std::string name, io::DType dtype, std::vector<std::int64_t> shape,
                         const std::vector<std::uint8_t>& bytes);
// I32 [values.size()].
EncodedTensor int32Tensor(std::string name, const std::vector<std::int32_t>& values);

}  // namespace qs::formats::detail
