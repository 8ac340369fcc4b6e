#pragma once
// Inline, branch-free element conversions for the hot loops of the float formats (FP8, MXFP4,
// NVFP4). qs::io's scalar conversions are the reference; these exist because a call per element
// across translation units would cost more than the conversion itself and blocks vectorisation.
// tests/quant/test_fp8.cpp and test_mxfp4.cpp check them against qs::io on every code and on
// millions of values, ties included.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>

#include "qs/x86_intrinsics.h"

namespace qs::quant::detail {

inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kE2m1Max = 6.0f;

// f32 -> E4M3 (fn) code, round to nearest even, saturating at +-448 (the reference clamps before its
// cast; NaN also saturates). All integer arithmetic so that the loops calling it vectorise: a
// floating-point select may trap, and GCC will not if-convert it without -fno-trapping-math.
[[gnu::always_inline]] inline std::uint8_t encodeE4m3(float v) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
    const std::uint32_t sign = (bits >> 24) & 0x80u;
    const std::uint32_t mag = std::min(bits & 0x7FFFFFFFu, 0x43E00000u);  // 0x43E00000 = 448
    // Normal range (|v| >= 2^-6): round the f32 mantissa to 3 bits at bit 20 (ties to even), then
    // re-bias the exponent from 127 to 7. A carry out of the mantissa bumps the exponent, as it should.
    const std::uint32_t rounded = mag + 0x7FFFFu + ((mag >> 20) & 1u);
    const std::uint32_t normal = (rounded >> 20) - (120u << 3);
    // Subnormal range (|v| < 2^-6, step 2^-9): the 24-bit significand shifted right by
    // 141 - exponent, rounded to nearest even (shifts past 31 leave 0, as they should).
    const std::uint32_t significand = (mag & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t shift = std::min(141u - (mag >> 23), 31u);
    const std::uint32_t sub = (significand + (1u << (shift - 1)) - 1u + ((significand >> shift) & 1u)) >> shift;
    const std::uint32_t code = mag < 0x3C800000u ? sub : normal;  // 0x3C800000 = 2^-6
    return static_cast<std::uint8_t>(sign | code);
}

// Largest magnitude of x[0, n): the maximum of the sign-cleared bit patterns, which orders like
// the magnitudes (and vectorises, where a float max with NaN semantics does not).
[[gnu::always_inline]] inline float absMax(const float* x, std::int64_t n) {
    std::uint32_t m = 0;
#pragma omp simd reduction(max : m)
    for (std::int64_t i = 0; i < n; ++i) m = std::max(m, std::bit_cast<std::uint32_t>(x[i]) & 0x7FFFFFFFu);
    return std::bit_cast<float>(m);
}

// absMax over a block of compile-time size: fully unrolled, with no remainder loop, for the small
// blocks of the FP4 formats (16 or 32 values) where loop overhead would cost as much as the work.
template <int N>
[[gnu::always_inline]] inline float absMaxFixed(const float* x) {
    std::uint32_t m = 0;
#pragma omp simd reduction(max : m)
    for (int i = 0; i < N; ++i) m = std::max(m, std::bit_cast<std::uint32_t>(x[i]) & 0x7FFFFFFFu);
    return std::bit_cast<float>(m);
}

// E4M3 code -> f32, for the 256-entry decode table (0x7F / 0xFF are NaN).
constexpr float decodeE4m3(std::uint8_t code) {
    const int exponent = (code >> 3) & 0xF;
    const int mantissa = code & 0x7;
    if (exponent == 15 && mantissa == 7) return std::numeric_limits<float>::quiet_NaN();
    float magnitude =
        exponent == 0 ? static_cast<float>(mantissa) / 512.0f : (1.0f + static_cast<float>(mantissa) / 8.0f);
    for (int e = 7; e < exponent; ++e) magnitude *= 2.0f;
    for (int e = exponent; e < 7 && exponent != 0; ++e) magnitude *= 0.5f;
    return (code & 0x80) ? -magnitude : magnitude;
}

inline const std::array<float, 256>& e4m3Table() {
    static const std::array<float, 256> table = [] {
        std::array<float, 256> t{};
        for (int c = 0; c < 256; ++c) t[static_cast<std::size_t>(c)] = decodeE4m3(static_cast<std::uint8_t>(c));
        return t;
    }();
    return table;
}

// f32 -> E2M1 code (bit 3 sign, bits 0-2 index into {0, .5, 1, 1.5, 2, 3, 4, 6}), round to nearest
// even, saturating. Counting the midpoints passed encodes the ties: at 0.25, 1.25, 2.5 and 5 the
// even code is the lower one (strict >), at 0.75, 1.75 and 3.5 the upper one (>=). The sign is
// kept for values that round to zero (-0 is code 8), as the reference vectors show.
[[gnu::always_inline]] inline std::uint8_t encodeE2m1(float v) {
    const std::uint32_t sign = (std::bit_cast<std::uint32_t>(v) >> 28) & 0x8u;
    const float a = v < 0.0f ? -v : v;
    const std::uint32_t index = static_cast<std::uint32_t>(a > 0.25f) + static_cast<std::uint32_t>(a >= 0.75f) +
                                static_cast<std::uint32_t>(a > 1.25f) + static_cast<std::uint32_t>(a >= 1.75f) +
                                static_cast<std::uint32_t>(a > 2.5f) + static_cast<std::uint32_t>(a >= 3.5f) +
                                static_cast<std::uint32_t>(a > 5.0f);
    return static_cast<std::uint8_t>(sign | index);
}

#if QS_X86
// The AVX2 helpers below are compiled for AVX2 whatever the build's -march, and inline only into
// kernels that are (qs/cpu_features.h chooses those at run time).

// encodeE2m1 on 8 lanes, as 32-bit codes: the same strict / non-strict midpoint comparisons (ordered:
// a NaN passes none, as in the scalar code), the same sign bit.
[[gnu::always_inline, gnu::target("avx2")]] inline __m256i encodeE2m1x8(__m256 v) {
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(bits, 28), _mm256_set1_epi32(8));
    const __m256 a = _mm256_castsi256_ps(_mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF)));
    // Each passed comparison is an all-ones lane, i.e. -1: subtracting the masks counts them.
    __m256i index = _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(0.25f), _CMP_GT_OQ));
    index = _mm256_add_epi32(index, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(0.75f), _CMP_GE_OQ)));
    index = _mm256_add_epi32(index, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(1.25f), _CMP_GT_OQ)));
    index = _mm256_add_epi32(index, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(1.75f), _CMP_GE_OQ)));
    index = _mm256_add_epi32(index, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(2.5f), _CMP_GT_OQ)));
    index = _mm256_add_epi32(index, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(3.5f), _CMP_GE_OQ)));
    index = _mm256_add_epi32(index, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(5.0f), _CMP_GT_OQ)));
    return _mm256_or_si256(_mm256_sub_epi32(_mm256_setzero_si256(), index), sign);
}

// Four vectors of 32-bit codes (each 0..255) -> 32 bytes in lane order.
[[gnu::always_inline, gnu::target("avx2")]] inline void storeCodes32(std::uint8_t* out, __m256i c0, __m256i c1,
                                                                     __m256i c2, __m256i c3) {
    const __m256i p01 = _mm256_packs_epi32(c0, c1);  // c0[0:4] c1[0:4] | c0[4:8] c1[4:8]
    const __m256i p23 = _mm256_packs_epi32(c2, c3);
    const __m256i bytes = _mm256_packus_epi16(p01, p23);  // c0[0:4] c1[0:4] c2[0:4] c3[0:4] | the upper halves
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permutevar8x32_epi32(bytes, order));
}

// Largest magnitude of 16 values, like absMaxFixed<16>.
[[gnu::always_inline, gnu::target("avx2")]] inline float absMax16(const float* x) {
    const __m256i mask = _mm256_set1_epi32(0x7FFFFFFF);
    const __m256i a = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)), mask);
    const __m256i b = _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 8)), mask);
    const __m256i m8 = _mm256_max_epu32(a, b);
    __m128i m = _mm_max_epu32(_mm256_castsi256_si128(m8), _mm256_extracti128_si256(m8, 1));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0x4E));
    m = _mm_max_epu32(m, _mm_shuffle_epi32(m, 0xB1));
    return std::bit_cast<float>(static_cast<std::uint32_t>(_mm_cvtsi128_si32(m)));
}
#endif

inline constexpr std::array<float, 16> kE2m1Values = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                                      -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

}  // namespace qs::quant::detail
