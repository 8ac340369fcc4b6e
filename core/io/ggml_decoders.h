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

// Q4_0, Q4_1, Q5_0, Q5_1 and the 1/2-bit Q1_0, Q2_0: one F16 scale per block (ggml_decode_legacy.cpp).
void decodeQ4_0(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeQ4_1(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeQ5_0(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeQ5_1(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeQ1_0(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeQ2_0(const std::uint8_t* src, float* dst, std::int64_t n);

// The K-quants: 256-weight super-blocks with per-sub-block scales (ggml_decode_k.cpp).
void decodeQ2_K(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeQ3_K(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeQ4_K(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeQ5_K(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeQ6_K(const std::uint8_t* src, float* dst, std::int64_t n);

// 4-bit codes indexing a table of 16 levels: IQ4_NL, IQ4_XS, MXFP4, NVFP4 (ggml_decode_fp4.cpp).
void decodeIq4Nl(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeIq4Xs(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeMxfp4(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeNvfp4(const std::uint8_t* src, float* dst, std::int64_t n);

// Ternary weights: TQ1_0, TQ2_0 (ggml_decode_tq.cpp).
void decodeTq1_0(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeTq2_0(const std::uint8_t* src, float* dst, std::int64_t n);

// Codebook types: IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S (ggml_decode_iq.cpp).
void decodeIq1S(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeIq1M(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeIq2Xxs(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeIq2Xs(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeIq2S(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeIq3Xxs(const std::uint8_t* src, float* dst, std::int64_t n);
void decodeIq3S(const std::uint8_t* src, float* dst, std::int64_t n);

}  // namespace qs::io::ggml
