// ggml's first block types: 32 weights per block under an F16 scale d (and, for the _1 types, an F16
// offset m). Q4_0 / Q4_1 pack weight j in the low nibble and weight j + 16 in the high nibble of byte
// j; Q5_0 / Q5_1 add a 32-bit little-endian word whose bit j is the fifth bit of weight j.
//   Q4_0: (q - 8) * d        Q4_1: q * d + m        Q5_0: (q - 16) * d        Q5_1: q * d + m
// Q1_0 (128 weights, one bit each: +d or -d) and Q2_0 (64 weights, 2 bits: (q - 1) * d) follow the
// same pattern. Products are rounded before sums, as ggml's C does (no FMA: see CMakeLists).
#include "qs/io/ggml_blocks.h"

#include "ggml_decoders.h"
#include "ggml_sign_table.h"

namespace qs::io::ggml {
namespace {
constexpr int kBlock = 32;
constexpr int kHalf = kBlock / 2;
}  // namespace

void decodeQ4_0(const std::uint8_t* src, float* dst, std::int64_t n) {
    constexpr int bytes = 2 + kHalf;
    for (std::int64_t b = 0; b < n / kBlock; ++b, src += bytes, dst += kBlock) {
        const float d = readHalf(src);
        const std::uint8_t* qs = src + 2;
#pragma omp simd
        for (int j = 0; j < kHalf; ++j) {
            dst[j] = static_cast<float>((qs[j] & 0xF) - 8) * d;
            dst[j + kHalf] = static_cast<float>((qs[j] >> 4) - 8) * d;
        }
    }
}

void decodeQ4_1(const std::uint8_t* src, float* dst, std::int64_t n) {
    constexpr int bytes = 4 + kHalf;
    for (std::int64_t b = 0; b < n / kBlock; ++b, src += bytes, dst += kBlock) {
        const float d = readHalf(src);
        const float m = readHalf(src + 2);
        const std::uint8_t* qs = src + 4;
#pragma omp simd
        for (int j = 0; j < kHalf; ++j) {
            dst[j] = static_cast<float>(qs[j] & 0xF) * d + m;
            dst[j + kHalf] = static_cast<float>(qs[j] >> 4) * d + m;
        }
    }
}

namespace {
// The 5-bit codes of a Q5 block: nibbles at qs, fifth bits in the word at qh.
inline void fiveBitCodes(const std::uint8_t* qh, const std::uint8_t* qs, int codes[kBlock]) {
    const std::uint32_t high = readU32(qh);
    for (int j = 0; j < kHalf; ++j) {
        codes[j] = (qs[j] & 0xF) | static_cast<int>(((high >> j) & 1u) << 4);
        codes[j + kHalf] = (qs[j] >> 4) | static_cast<int>(((high >> (j + kHalf)) & 1u) << 4);
    }
}
}  // namespace

void decodeQ5_0(const std::uint8_t* src, float* dst, std::int64_t n) {
    constexpr int bytes = 2 + 4 + kHalf;
    int codes[kBlock];
    for (std::int64_t b = 0; b < n / kBlock; ++b, src += bytes, dst += kBlock) {
        const float d = readHalf(src);
        fiveBitCodes(src + 2, src + 6, codes);
#pragma omp simd
        for (int j = 0; j < kBlock; ++j) dst[j] = static_cast<float>(codes[j] - 16) * d;
    }
}

void decodeQ5_1(const std::uint8_t* src, float* dst, std::int64_t n) {
    constexpr int bytes = 4 + 4 + kHalf;
    int codes[kBlock];
    for (std::int64_t b = 0; b < n / kBlock; ++b, src += bytes, dst += kBlock) {
        const float d = readHalf(src);
        const float m = readHalf(src + 2);
        fiveBitCodes(src + 4, src + 8, codes);
#pragma omp simd
        for (int j = 0; j < kBlock; ++j) dst[j] = static_cast<float>(codes[j]) * d + m;
    }
}

void decodeQ1_0(const std::uint8_t* src, float* dst, std::int64_t n) {
    constexpr int block = 128;
    constexpr int bytes = 2 + block / 8;
    for (std::int64_t b = 0; b < n / block; ++b, src += bytes, dst += block) {
        const float minusD = -readHalf(src);  // a set bit is +d: -d times the table's -1
        for (int byte = 0; byte < block / 8; ++byte)
#pragma omp simd
            for (int j = 0; j < 8; ++j)
                dst[8 * byte + j] = minusD * kSignTable[src[2 + byte]][static_cast<std::size_t>(j)];
    }
}

void decodeQ2_0(const std::uint8_t* src, float* dst, std::int64_t n) {
    constexpr int block = 64;
    constexpr int bytes = 2 + block / 4;
    for (std::int64_t b = 0; b < n / block; ++b, src += bytes, dst += block) {
        const float d = readHalf(src);
        for (int byte = 0; byte < block / 4; ++byte)
#pragma omp simd
            for (int k = 0; k < 4; ++k)
                dst[4 * byte + k] = static_cast<float>(((src[2 + byte] >> (2 * k)) & 3) - 1) * d;
    }
}

}  // namespace qs::io::ggml
