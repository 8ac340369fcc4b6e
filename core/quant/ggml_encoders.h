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

// Q4_0, Q4_1, Q5_0, Q5_1: ggml's reference quantizers bit for bit without importance, an
// importance-weighted scale search with it (ggml_encode_legacy.cpp).
void encodeQ4_0(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);
void encodeQ4_1(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);
void encodeQ5_0(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);
void encodeQ5_1(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);

// The K-quants, least (importance-weighted) squared error (ggml_encode_k.cpp).
void encodeQ2_K(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);
void encodeQ3_K(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);
void encodeQ4_K(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);
void encodeQ5_K(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);
void encodeQ6_K(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);

// IQ4_NL, IQ4_XS: non-uniform 4-bit levels (ggml_encode_iq4.cpp).
void encodeIq4Nl(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);
void encodeIq4Xs(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);

// MXFP4, NVFP4 in ggml's layouts, bit for bit ggml's reference quantizers (ggml_encode_fp4.cpp).
void encodeMxfp4(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);
void encodeNvfp4(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance);

}  // namespace qs::quant::ggml
