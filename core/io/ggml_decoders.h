#pragma once
// The row decoders of ggml's block types, one family per file (ggml_decode_plain.cpp,
// ggml_decode_q8.cpp, ...); ggml_type.cpp's table points each type at its decoder. n is always a
// whole number of blocks.
#include <cstdint>

namespace qs::io::ggml {

using DecodeRow = void (*)(const std::uint8_t* src, float* dst, std::int64_t n);

// Plain little-endian numbers (ggml_decode_plain.cpp).
void decodeF32(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeF16(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeBf16(const std::uint8_t* src, float* dst, std::int64_t n);

// Q8_0: blocks of 32 int8 codes under one F16 scale (ggml_decode_q8.cpp).
void decodeQ8_0(const std::uint8_t* src, float* dst, std::int64_t n);

}  // namespace qs::io::ggml
