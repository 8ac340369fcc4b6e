// DType names and sizes, and the scalar conversions between each float format and f32.
#include "qs/io/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "qs/eigen.h"

#include "minifloat.h"

namespace qs::io {

namespace {

struct DTypeEntry {
    DType type;
    std::string_view name;
    std::size_t size;
    bool floating;
};

constexpr std::array<DTypeEntry, 16> kDTypes{{
    {DType::F64, "F64", 8, true},
    {DType::F32, "F32", 4, true},
    {DType::F16, "F16", 2, true},
    {DType::BF16, "BF16", 2, true},
    {DType::F8_E4M3, "F8_E4M3", 1, true},
    {DType::F8_E5M2, "F8_E5M2", 1, true},
    {DType::F8_E8M0, "F8_E8M0", 1, true},
    {DType::I64, "I64", 8, false},
    {DType::I32, "I32", 4, false},
    {DType::I16, "I16", 2, false},
    {DType::I8, "I8", 1, false},
    {DType::U64, "U64", 8, false},
    {DType::U32, "U32", 4, false},
    {DType::U16, "U16", 2, false},
    {DType::U8, "U8", 1, false},
    {DType::BOOL, "BOOL", 1, false},
}};

const DTypeEntry& entry(DType t) {
    for (const auto& e : kDTypes)
        if (e.type == t) return e;
    return kDTypes[1];  // unreachable for valid enumerators
}

constexpr detail::MiniFloatFormat kE4m3{3, 7, 15, 6};
constexpr detail::MiniFloatFormat kE5m2{2, 15, 30, 3};
constexpr detail::MiniFloatFormat kE2m1{1, 1, 3, 1};

}  // namespace

std::optional<DType> parseDType(std::string_view name) {
    for (const auto& e : kDTypes)
        if (e.name == name) return e.type;
    return std::nullopt;
}

std::string_view dtypeName(DType t) { return entry(t).name; }
std::size_t dtypeSize(DType t) { return entry(t).size; }
bool isFloating(DType t) { return entry(t).floating; }

bool isDenseFloat(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64; }

float f16ToF32(std::uint16_t bits) {
    return static_cast<float>(Eigen::half(Eigen::half_impl::raw_uint16_to_half(bits)));
}

std::uint16_t f32ToF16(float v) {
    return Eigen::half(v).x;  // RNE (F16C or Eigen's own rounding)
}

float bf16ToF32(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t{bits} << 16); }

std::uint16_t f32ToBf16(float v) {
    return Eigen::bfloat16(v).value;  // RNE; NaN becomes a quiet NaN of the same sign
}

float e4m3ToF32(std::uint8_t bits) {
    const float sign = (bits & 0x80) ? -1.0f : 1.0f;
    const int exponent = (bits >> 3) & 0xF;
    const int mantissa = bits & 0x7;
    if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
    if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);
    return sign * std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
}

std::uint8_t f32ToE4m3(float v) {
    if (std::isnan(v)) return std::signbit(v) ? 0xFF : 0x7F;
    return detail::encodeMiniFloat(v, kE4m3, 7);  // Inf saturates like finite overflow
}

float e5m2ToF32(std::uint8_t bits) {
    // E5M2 is the upper byte of an IEEE half.
    return f16ToF32(static_cast<std::uint16_t>(bits << 8));
}

std::uint8_t f32ToE5m2(float v) {
    if (std::isnan(v)) return std::signbit(v) ? 0xFE : 0x7E;
    if (std::isinf(v)) return v < 0 ? 0xFC : 0x7C;
    return detail::encodeMiniFloat(v, kE5m2, 7);
}

float e8m0ToF32(std::uint8_t bits) {
    if (bits == 0xFF) return std::numeric_limits<float>::quiet_NaN();
    return std::ldexp(1.0f, static_cast<int>(bits) - 127);
}

// Nearest power of two in the log domain: v = m * 2^k with m in [1, 2) goes up when
// log2(m) >= 1/2, i.e. m*m >= 2 (exact in double: m has 24 significant bits).
// Finite values above 2^127 saturate to 2^127; +Inf, NaN and negative values give NaN (0xFF).
std::uint8_t f32ToE8m0(float v) {
    if (std::isnan(v) || v < 0.0f || std::isinf(v)) return 0xFF;
    if (v <= 0x1p-127f) return 0;
    int k = 0;
    const double m = 2.0 * std::frexp(static_cast<double>(v), &k);  // m in [1, 2)
    --k;
    if (m * m >= 2.0) ++k;
    const int code = k + 127;
    if (code < 0) return 0;
    return static_cast<std::uint8_t>(code > 254 ? 254 : code);
}

float e2m1ToF32(std::uint8_t nibble) {
    static constexpr std::array<float, 8> kMagnitudes{0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    const float m = kMagnitudes[nibble & 0x7];
    return (nibble & 0x8) ? -m : m;
}

std::uint8_t f32ToE2m1(float v) {
    if (std::isnan(v)) return 0;  // FP4 has no NaN; 0 is the least harmful code
    return detail::encodeMiniFloat(v, kE2m1, 3);
}

}  // namespace qs::io
