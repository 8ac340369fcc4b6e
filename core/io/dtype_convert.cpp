// Bulk conversions between raw safetensors element bytes and f32. These loops are the hot path of
// every analysis (a 7B model is ~7e9 elements), so each is a branch-free loop the compiler can
// vectorise, split across threads for large spans.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "qs/io/dtype.h"

namespace qs::io {

namespace {

// Spans below this many elements are converted on the calling thread: starting a parallel region
// costs more than it saves.
constexpr std::size_t kParallelThreshold = std::size_t{1} << 18;

// Runs body(begin, end) over [0, count), split across OpenMP threads for large counts.
template <typename Body>
void forChunks(std::size_t count, Body&& body) {
    if (count < kParallelThreshold) {
        body(std::size_t{0}, count);
        return;
    }
    constexpr std::size_t kChunk = std::size_t{1} << 16;
    const auto chunks = static_cast<std::int64_t>((count + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
    for (std::int64_t c = 0; c < chunks; ++c) {
        const std::size_t begin = static_cast<std::size_t>(c) * kChunk;
        body(begin, std::min(count, begin + kChunk));
    }
}

template <typename T>
T load(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));  // unaligned-safe; compiles to a plain load
    return v;
}

// IEEE half -> f32 without branches (the method of Maratyszcza's FP16 library), exact for every
// code including subnormals, Inf and NaN; vectorises where F16C is not available to the compiler.
inline float halfBitsToF32(std::uint16_t h) {
    const std::uint32_t w = std::uint32_t{h} << 16;
    const std::uint32_t sign = w & 0x80000000u;
    const std::uint32_t twoW = w + w;
    const float normalized = std::bit_cast<float>((twoW >> 4) + (0xE0u << 23)) * 0x1p-112f;
    const float denormalized = std::bit_cast<float>((twoW >> 17) | (126u << 23)) - 0.5f;
    // A mask instead of ?: keeps the loop free of control flow, which GCC needs to vectorise it.
    const std::uint32_t useDenormalized = 0u - static_cast<std::uint32_t>(twoW < (1u << 27));
    const std::uint32_t magnitude = (std::bit_cast<std::uint32_t>(denormalized) & useDenormalized) |
                                    (std::bit_cast<std::uint32_t>(normalized) & ~useDenormalized);
    return std::bit_cast<float>(sign | magnitude);
}

// The 8-bit floats are decoded with integer arithmetic only (no table lookups, no branches), so the
// loops vectorise like the 16-bit ones; the exhaustive tests compare them with the scalar decoders.

// E4M3fn: the magnitude bits shifted into an IEEE half have the right mantissa and an exponent
// 8 too small (bias 7 vs 15); subnormals line up the same way. 0x7F/0xFF are NaN.
inline float e4m3BitsToF32(std::uint8_t c) {
    const std::uint32_t magnitude = c & 0x7Fu;
    const std::uint32_t value =
        std::bit_cast<std::uint32_t>(halfBitsToF32(static_cast<std::uint16_t>(magnitude << 7)) * 256.0f);
    const std::uint32_t isNan = 0u - static_cast<std::uint32_t>(magnitude == 0x7Fu);
    return std::bit_cast<float>(((std::uint32_t{c} & 0x80u) << 24) | (value & ~isNan) | (0x7FC00000u & isNan));
}

// E5M2 is the upper byte of an IEEE half.
inline float e5m2BitsToF32(std::uint8_t c) { return halfBitsToF32(static_cast<std::uint16_t>(c << 8)); }

// E8M0 code c is the f32 exponent field; code 0 (2^-127) is the f32 subnormal 0x00400000 and
// code 255 is NaN, both reached by setting bit 22.
inline float e8m0BitsToF32(std::uint8_t c) {
    const std::uint32_t special = 0u - static_cast<std::uint32_t>(c == 0 || c == 0xFF);
    return std::bit_cast<float>((std::uint32_t{c} << 23) | (0x00400000u & special));
}

template <float (*Decode)(std::uint8_t)>
void byteFloatToF32(const std::byte* data, std::size_t count, float* out) {
    const auto* codes = reinterpret_cast<const std::uint8_t*>(data);
    forChunks(count, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) out[i] = Decode(codes[i]);
    });
}

template <typename T>
void numericToF32(const std::byte* data, std::size_t count, float* out) {
    forChunks(count, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) out[i] = static_cast<float>(load<T>(data + i * sizeof(T)));
    });
}

// f32 -> integer: round to nearest even, clamp to the type's range, NaN -> 0.
template <typename T>
T f32ToInteger(float v) {
    if (std::isnan(v)) return T{0};
    const double r = std::nearbyint(static_cast<double>(v));
    // max + 1 is 2^digits for every integer type (for 64-bit types max itself rounds up to it).
    constexpr double kUpper = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
    if (r >= kUpper) return std::numeric_limits<T>::max();
    if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    return static_cast<T>(r);
}

template <typename T, typename Encode>
void encodeFromF32(const float* in, std::size_t count, std::byte* out, Encode encode) {
    forChunks(count, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) {
            const T v = encode(in[i]);
            std::memcpy(out + i * sizeof(T), &v, sizeof(T));
        }
    });
}

}  // namespace

void convertToF32(DType src, const std::byte* data, std::size_t count, float* out) {
    switch (src) {
        case DType::F32: std::memcpy(out, data, count * sizeof(float)); return;
        case DType::F16:
            forChunks(count, [&](std::size_t b, std::size_t e) {
                for (std::size_t i = b; i < e; ++i) out[i] = halfBitsToF32(load<std::uint16_t>(data + 2 * i));
            });
            return;
        case DType::BF16:
            forChunks(count, [&](std::size_t b, std::size_t e) {
                for (std::size_t i = b; i < e; ++i)
                    out[i] = std::bit_cast<float>(std::uint32_t{load<std::uint16_t>(data + 2 * i)} << 16);
            });
            return;
        case DType::F8_E4M3: byteFloatToF32<e4m3BitsToF32>(data, count, out); return;
        case DType::F8_E5M2: byteFloatToF32<e5m2BitsToF32>(data, count, out); return;
        case DType::F8_E8M0: byteFloatToF32<e8m0BitsToF32>(data, count, out); return;
        case DType::F64: numericToF32<double>(data, count, out); return;
        case DType::I64: numericToF32<std::int64_t>(data, count, out); return;
        case DType::I32: numericToF32<std::int32_t>(data, count, out); return;
        case DType::I16: numericToF32<std::int16_t>(data, count, out); return;
        case DType::I8: numericToF32<std::int8_t>(data, count, out); return;
        case DType::U64: numericToF32<std::uint64_t>(data, count, out); return;
        case DType::U32: numericToF32<std::uint32_t>(data, count, out); return;
        case DType::U16: numericToF32<std::uint16_t>(data, count, out); return;
        case DType::U8: numericToF32<std::uint8_t>(data, count, out); return;
        case DType::BOOL:
            forChunks(count, [&](std::size_t b, std::size_t e) {
                for (std::size_t i = b; i < e; ++i) out[i] = data[i] != std::byte{0} ? 1.0f : 0.0f;
            });
            return;
    }
}

void convertFromF32(DType dst, const float* in, std::size_t count, std::byte* out) {
    switch (dst) {
        case DType::F32: std::memcpy(out, in, count * sizeof(float)); return;
        case DType::F16: encodeFromF32<std::uint16_t>(in, count, out, f32ToF16); return;
        case DType::BF16: encodeFromF32<std::uint16_t>(in, count, out, f32ToBf16); return;
        case DType::F8_E4M3: encodeFromF32<std::uint8_t>(in, count, out, f32ToE4m3); return;
        case DType::F8_E5M2: encodeFromF32<std::uint8_t>(in, count, out, f32ToE5m2); return;
        case DType::F8_E8M0: encodeFromF32<std::uint8_t>(in, count, out, f32ToE8m0); return;
        case DType::F64: encodeFromF32<double>(in, count, out, [](float v) { return static_cast<double>(v); }); return;
        case DType::I64: encodeFromF32<std::int64_t>(in, count, out, f32ToInteger<std::int64_t>); return;
        case DType::I32: encodeFromF32<std::int32_t>(in, count, out, f32ToInteger<std::int32_t>); return;
        case DType::I16: encodeFromF32<std::int16_t>(in, count, out, f32ToInteger<std::int16_t>); return;
        case DType::I8: encodeFromF32<std::int8_t>(in, count, out, f32ToInteger<std::int8_t>); return;
        case DType::U64: encodeFromF32<std::uint64_t>(in, count, out, f32ToInteger<std::uint64_t>); return;
        case DType::U32: encodeFromF32<std::uint32_t>(in, count, out, f32ToInteger<std::uint32_t>); return;
        case DType::U16: encodeFromF32<std::uint16_t>(in, count, out, f32ToInteger<std::uint16_t>); return;
        case DType::U8: encodeFromF32<std::uint8_t>(in, count, out, f32ToInteger<std::uint8_t>); return;
        case DType::BOOL:
            // BOOL follows the integer rule (NaN -> 0); any other non-zero value is true.
            encodeFromF32<std::uint8_t>(in, count, out,
                                        [](float v) { return static_cast<std::uint8_t>(v != 0.0f && !std::isnan(v)); });
            return;
    }
}

}  // namespace qs::io
