#pragma once
// Pieces of ggml's block layouts that both the decoders (qs_io) and the encoders (qs_quant) need:
// little-endian 16-bit fields, F16 scales, the value tables of the non-linear 4-bit types, the packed
// 6-bit scales of the K-quants, and the E8M0 / UE4M3 scales of MXFP4 / NVFP4. docs/formats/gguf-types.md
// describes every block. Inline, because the decoders call them once per block in their inner loops.
#include <bit>
#include <cstdint>

namespace qs::io::ggml {

// Elements of a K-quant or IQ super-block (ggml's QK_K).
inline constexpr int kSuperBlock = 256;

inline std::uint16_t readU16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
inline std::uint32_t readU32(const std::uint8_t* p) {
    return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) | (std::uint32_t{p[3]} << 24);
}
inline void writeU16(std::uint8_t* p, std::uint16_t v) {
    p[0] = static_cast<std::uint8_t>(v & 0xFF);
    p[1] = static_cast<std::uint8_t>(v >> 8);
}
inline void writeU32(std::uint8_t* p, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// IEEE half -> float, exact (every half is a float). Inline bit arithmetic rather than
// io::f16ToF32, which is an out-of-line call per block scale.
inline float halfToFloat(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1Fu;
    const std::uint32_t mantissa = h & 0x3FFu;
    if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
        const float v = static_cast<float>(mantissa) * 0x1p-24f;
        return sign ? -v : v;
    }
    const std::uint32_t bits =
        exponent == 0x1F ? 0x7F800000u | (mantissa << 13) : ((exponent + 112u) << 23) | (mantissa << 13);
    return std::bit_cast<float>(sign | bits);
}
inline float readHalf(const std::uint8_t* p) { return halfToFloat(readU16(p)); }

// The 16 levels of IQ4_NL and IQ4_XS (a code indexes them; the block scale multiplies).
inline constexpr std::int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                 1,    13,   25,  38,  53,  69,  89,  113};

// E2M1 (FP4) code -> twice its value, as ggml stores it: the scales of MXFP4 and NVFP4 carry the 1/2.
inline constexpr std::int8_t kFp4TwiceValues[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// MXFP4's E8M0 scale e, halved (to undo kFp4TwiceValues' doubling): 2^(e-128), exact, as a float bit
// pattern (e = 0 and 1 give the subnormals 2^-128 and 2^-127).
inline float e8m0HalfToFloat(std::uint8_t e) {
    const std::uint32_t bits = e < 2 ? 0x00200000u << e : std::uint32_t(e - 1) << 23;
    return std::bit_cast<float>(bits);
}

// NVFP4's UE4M3 sub-block scale, halved like e8m0HalfToFloat. Bit 7 is not part of the value (the
// scale is unsigned); 0 and 0x7F (E4M3's NaN) decode to 0, as in ggml.
inline float ue4m3HalfToFloat(std::uint8_t x) {
    if (x == 0 || x == 0x7F) return 0.0f;
    const int exponent = (x >> 3) & 0xF;
    const int mantissa = x & 0x7;
    // Both forms are exact: a 4-bit significand times a power of two.
    const float v = exponent == 0
                        ? static_cast<float>(mantissa) * 0x1p-9f
                        : static_cast<float>(8 + mantissa) * std::bit_cast<float>(std::uint32_t(exponent + 117) << 23);
    return v * 0.5f;
}

// Q4_K / Q5_K: eight 6-bit scales and eight 6-bit mins in 12 bytes. Pairs 0-3 sit in the low 6
// bits of bytes 0-3 (scales) and 4-7 (mins); pairs 4-7 keep their low 4 bits in the nibbles of bytes
// 8-11 and their top 2 bits in the top 2 bits of bytes 0-3 (scales) and 4-7 (mins).
inline void unpackScaleMinK4(int j, const std::uint8_t* q, std::uint8_t& scale, std::uint8_t& min) {
    if (j < 4) {
        scale = q[j] & 63;
        min = q[j + 4] & 63;
    } else {
        scale = static_cast<std::uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        min = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}
inline void packScaleMinK4(const std::uint8_t scales[8], const std::uint8_t mins[8], std::uint8_t q[12]) {
    for (int j = 0; j < 4; ++j) {
        q[j] = static_cast<std::uint8_t>((scales[j] & 63) | ((scales[j + 4] >> 4) << 6));
        q[j + 4] = static_cast<std::uint8_t>((mins[j] & 63) | ((mins[j + 4] >> 4) << 6));
        q[j + 8] = static_cast<std::uint8_t>((scales[j + 4] & 0xF) | ((mins[j + 4] & 0xF) << 4));
    }
}

// Q3_K: sixteen 6-bit scales (stored +32) in 12 bytes. Scale j's low nibble is the low (j < 8) or
// high (j >= 8) nibble of byte j % 8; its top 2 bits are bits 2*(j/4) of byte 8 + j % 4.
inline void unpackScalesQ3K(const std::uint8_t q[12], int scales[16]) {
    for (int j = 0; j < 16; ++j) {
        const int low = j < 8 ? q[j] & 0xF : q[j - 8] >> 4;
        const int high = (q[8 + j % 4] >> (2 * (j / 4))) & 3;
        scales[j] = (low | (high << 4)) - 32;
    }
}
inline void packScalesQ3K(const int scales[16], std::uint8_t q[12]) {  // scales in -32..31
    for (int i = 0; i < 12; ++i) q[i] = 0;
    for (int j = 0; j < 16; ++j) {
        const int l = scales[j] + 32;
        q[j % 8] |= static_cast<std::uint8_t>((l & 0xF) << (j < 8 ? 0 : 4));
        q[8 + j % 4] |= static_cast<std::uint8_t>((l >> 4) << (2 * (j / 4)));
    }
}

}  // namespace qs::io::ggml
