#pragma once
// The row encoders of ggml's block types, one family per file (ggml_encode_plain.cpp,
// ggml_encode_q8.cpp, ...); ggml_encode.cpp's table points each type at its encoder. n is always a
// whole number of blocks; importance may be null.
#include <cstdint>

namespace qs::quant::ggml {

using EncodeRow = void (*)(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);

// Plain little-endian numbers, rounded to nearest even (ggml_encode_plain.cpp).
void encodeF32(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);
void encodeF16(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);
void encodeBf16(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);

// Q8_0 (ggml_encode_q8.cpp).
void encodeQ8_0(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);

}  // namespace qs::quant::ggml
