#pragma once
// The element conversions of core/quant/fp_codes.h as device functions, line for line, so that the
// GPU encoders produce the CPU's codes bit for bit. std::min / std::max / std::clamp are written
// out as the comparisons the standard defines (they differ from fminf / fmaxf on NaN).
#include <cstdint>

namespace qs::gpu::codes {

constexpr float kE4m3Max = 448.0f;
constexpr float kE2m1Max = 6.0f;

__device__ __forceinline__ float stdMax(float a, float b) { return a < b ? b : a; }
__device__ __forceinline__ float stdMin(float a, float b) { return b < a ? b : a; }
__device__ __forceinline__ std::uint32_t absBits(float v) { return __float_as_uint(v) & 0x7FFFFFFFu; }

// f32 -> E4M3 (fn), round to nearest even, saturating at +-448 (fp_codes.h encodeE4m3).
__device__ __forceinline__ std::uint8_t encodeE4m3(float v) {
    const std::uint32_t bits = __float_as_uint(v);
    const std::uint32_t sign = (bits >> 24) & 0x80u;
    const std::uint32_t mag = min(bits & 0x7FFFFFFFu, 0x43E00000u);
    const std::uint32_t rounded = mag + 0x7FFFFu + ((mag >> 20) & 1u);
    const std::uint32_t normal = (rounded >> 20) - (120u << 3);
    const std::uint32_t significand = (mag & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t shift = min(141u - (mag >> 23), 31u);
    const std::uint32_t sub = (significand + (1u << (shift - 1)) - 1u + ((significand >> shift) & 1u)) >> shift;
    const std::uint32_t code = mag < 0x3C800000u ? sub : normal;
    return static_cast<std::uint8_t>(sign | code);
}

// E4M3 code -> f32 (0x7F / 0xFF are NaN), as fp_codes.h decodeE4m3.
__device__ __forceinline__ float decodeE4m3(std::uint8_t code) {
    const int exponent = (code >> 3) & 0xF;
    const int mantissa = code & 0x7;
    if (exponent == 15 && mantissa == 7) return __uint_as_float(0x7FC00000u);
    float magnitude =
        exponent == 0 ? static_cast<float>(mantissa) / 512.0f : (1.0f + static_cast<float>(mantissa) / 8.0f);
    for (int e = 7; e < exponent; ++e) magnitude *= 2.0f;
    for (int e = exponent; e < 7 && exponent != 0; ++e) magnitude *= 0.5f;
    return (code & 0x80) ? -magnitude : magnitude;
}

// f32 -> E2M1 code, round to nearest even by counting the midpoints passed (fp_codes.h encodeE2m1).
__device__ __forceinline__ std::uint8_t encodeE2m1(float v) {
    const std::uint32_t sign = (__float_as_uint(v) >> 28) & 0x8u;
    const float a = v < 0.0f ? -v : v;
    const std::uint32_t index = static_cast<std::uint32_t>(a > 0.25f) + static_cast<std::uint32_t>(a >= 0.75f) +
                                static_cast<std::uint32_t>(a > 1.25f) + static_cast<std::uint32_t>(a >= 1.75f) +
                                static_cast<std::uint32_t>(a > 2.5f) + static_cast<std::uint32_t>(a >= 3.5f) +
                                static_cast<std::uint32_t>(a > 5.0f);
    return static_cast<std::uint8_t>(sign | index);
}

__device__ __forceinline__ float decodeE2m1(std::uint8_t code) {
    const float magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    const float m = magnitude[code & 0x7];
    return (code & 0x8) ? -m : m;
}

}  // namespace qs::gpu::codes
