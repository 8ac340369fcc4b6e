#pragma once
// Element types of safetensors tensors and exact conversions between them and f32.
//
// To f32: every conversion is exact (all these formats are subsets of f32, except F64 and the
// 64/32-bit integers, which round to nearest). From f32: round to nearest, ties to even, with each
// format's own rules for values it cannot hold:
//   F16, BF16     overflow -> +-Inf (IEEE), NaN stays NaN;
//   F8_E4M3 (fn)  no Inf: finite overflow and +-Inf saturate to +-448, NaN -> 0x7F/0xFF;
//   F8_E5M2       finite overflow saturates to +-57344, +-Inf stays Inf, NaN -> 0x7E/0xFE;
//   F8_E8M0       unsigned power of two 2^(e-127), e in 0..254, 0xFF is NaN; rounds to the nearest
//                 power of two in the log domain (ties up), values <= 2^-127 (and +-0) -> 2^-127,
//                 finite values above 2^127 saturate to 2^127, NaN/negative/+Inf -> NaN;
//   FP4 E2M1      (not a safetensors dtype; packed in U8 by the formats) values {0,.5,1,1.5,2,3,4,6}, saturating,
//                 NaN -> 0 (it has no NaN);
//   integers      round to nearest even, then clamp to the type's range; NaN -> 0.
//   BOOL          any non-zero value -> 1, zero and NaN -> 0; reads back as 0.0 / 1.0.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace qs::io {

enum class DType : std::uint8_t {
    F64,
    F32,
    F16,
    BF16,
    F8_E4M3,
    F8_E5M2,
    F8_E8M0,
    I64,
    I32,
    I16,
    I8,
    U64,
    U32,
    U16,
    U8,
    BOOL,
};

std::optional<DType> parseDType(std::string_view name);  // the safetensors string, e.g. "BF16"
std::string_view dtypeName(DType t);
std::size_t dtypeSize(DType t);  // bytes per element
bool isFloating(DType t);
// F32, F16, BF16 or F64: what a dense checkpoint stores its weights in (FP8 is a quantized format).
bool isDenseFloat(DType t);

// Scalar conversions (bit patterns in, f32 out and back).
float f16ToF32(std::uint16_t bits);
std::uint16_t f32ToF16(float v);
float bf16ToF32(std::uint16_t bits);
std::uint16_t f32ToBf16(float v);
float e4m3ToF32(std::uint8_t bits);
std::uint8_t f32ToE4m3(float v);
float e5m2ToF32(std::uint8_t bits);
std::uint8_t f32ToE5m2(float v);
float e8m0ToF32(std::uint8_t bits);
std::uint8_t f32ToE8m0(float v);
float e2m1ToF32(std::uint8_t nibble);  // low 4 bits used
std::uint8_t f32ToE2m1(float v);       // 4-bit code, RNE, saturating at +-6

// Bulk conversions of `count` elements; `src`/`dst` are raw little-endian element bytes.
// Large spans are split across threads (OpenMP).
void convertToF32(DType src, const std::byte* data, std::size_t count, float* out);
void convertFromF32(DType dst, const float* in, std::size_t count, std::byte* out);

}  // namespace qs::io
