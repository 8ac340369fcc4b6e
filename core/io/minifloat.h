#pragma once
// Encoding of f32 into small IEEE-like float formats (E4M3fn, E5M2, E2M1) with round to nearest,
// ties to even. Private to qs_io; the public entry points are the f32ToXxx functions of dtype.h.
#include <cmath>
#include <cstdint>

namespace qs::io::detail {

struct MiniFloatFormat {
    int mantissaBits;
    int bias;
    int maxExponentField;  // biased exponent of the largest finite value
    int maxMantissaAtMax;  // mantissa field of the largest finite value
};

// Sign-magnitude code of |v| (finite, non-NaN) with the sign bit at position `signBit`.
// Values beyond the largest finite one saturate to it (the callers handle Inf/NaN first where
// their format treats them differently).
inline std::uint8_t encodeMiniFloat(float v, const MiniFloatFormat& f, int signBit) {
    const std::uint8_t sign = std::signbit(v) ? static_cast<std::uint8_t>(1u << signBit) : 0;
    const float a = std::fabs(v);
    const int maxCode = (f.maxExponentField << f.mantissaBits) | f.maxMantissaAtMax;
    if (a == 0.0f) return sign;
    if (std::isinf(a)) return static_cast<std::uint8_t>(sign | maxCode);

    const int minExponent = 1 - f.bias;    // exponent of the smallest normal value
    int e = std::ilogb(a);                 // exact, also for f32 subnormals
    if (e < minExponent) e = minExponent;  // subnormal range: fixed quantum
    if (e > f.maxExponentField - f.bias) return static_cast<std::uint8_t>(sign | maxCode);

    // a / quantum is exact (scaling by a power of two inside f32's range); rint rounds to nearest
    // even in the default rounding mode.
    const float q = std::rint(std::ldexp(a, f.mantissaBits - e));
    auto mant = static_cast<int>(q);
    int field = e + f.bias;
    if (mant == 0) return sign;  // rounded down to zero
    if (mant < (1 << f.mantissaBits)) {
        field = 0;  // subnormal (only possible at minExponent)
    } else if (mant == (2 << f.mantissaBits)) {
        mant >>= 1;  // rounding carried into the next binade
        ++field;
    }
    int code = (field << f.mantissaBits) | (mant & ((1 << f.mantissaBits) - 1));
    if (code > maxCode) code = maxCode;
    return static_cast<std::uint8_t>(sign | code);
}

}  // namespace qs::io::detail
