// MXFP4 and NVFP4 in ggml's layouts (core/io/ggml_decode_fp4.cpp), bit for bit as ggml's reference
// quantizers: the block scale comes from the block's largest magnitude, then each weight takes the
// E2M1 code whose scaled value is nearest (the first of equals, so +0 over -0). ggml ignores
// importance weights for these types, and so do we.
// Built without FMA contraction (see CMakeLists): level * scale - x must round twice, as in ggml.
#include <bit>
#include <cmath>

#include "qs/io/ggml_blocks.h"

#include "ggml_encoders.h"

namespace qs::quant::ggml {
namespace {

using io::ggml::kFp4TwiceValues;

std::uint8_t nearestFp4(float x, float scale) {
    int best = 0;
    float bestError = std::fabs(static_cast<float>(kFp4TwiceValues[0]) * scale - x);
    for (int i = 1; i < 16; ++i) {
        const float error = std::fabs(static_cast<float>(kFp4TwiceValues[i]) * scale - x);
        if (error < bestError) {
            best = i;
            bestError = error;
        }
    }
    return static_cast<std::uint8_t>(best);
}

float absMax(const float* x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; ++j)
        if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    return amax;
}

// NVFP4's UE4M3 scale of v > 0 as ggml rounds it: the F32 mantissa's top 3 bits, plus the 4th as a
// rounding bit (ties away), saturating at 448 (0x7E); the subnormal range rounds v * 2^9 half up.
std::uint8_t floatToUe4m3(float v) {
    if (!(v > 0.0f)) return 0;
    v = std::fmin(v, 448.0f);
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
    int exponent = static_cast<int>((bits >> 23) & 0xFF) - 127 + 7;
    if (exponent <= 0) {
        const int mantissa = std::min(7, static_cast<int>(v * 512.0f + 0.5f));
        return static_cast<std::uint8_t>(mantissa < 1 ? 0 : mantissa);
    }
    if (exponent >= 15) return 0x7E;
    int mantissa = static_cast<int>((bits >> 20) & 0x7) + static_cast<int>((bits >> 19) & 1);
    if (mantissa > 7) {
        mantissa = 0;
        if (++exponent >= 15) return 0x7E;
    }
    return static_cast<std::uint8_t>((exponent << 3) | mantissa);
}

}  // namespace

// MXFP4: E8M0 exponent e = floor(log2(amax)) - 2 + 127, so amax / 2^(e-127) lies in [4, 8).
void encodeMxfp4(const float* src, std::uint8_t* dst, std::int64_t n, const float*) {
    for (std::int64_t b = 0; b < n / 32; ++b, src += 32, dst += 17) {
        const float amax = absMax(src, 32);
        // As ggml: the float exponent converted to an integer, of which the byte is kept.
        const auto e =
            amax > 0.0f ? static_cast<std::uint8_t>(static_cast<int>(std::floor(std::log2(amax)) - 2.0f + 127.0f)) : 0;
        const float scale = io::ggml::e8m0HalfToFloat(e);
        dst[0] = e;
        for (int j = 0; j < 16; ++j)
            dst[1 + j] = static_cast<std::uint8_t>(nearestFp4(src[j], scale) | (nearestFp4(src[j + 16], scale) << 4));
    }
}

// NVFP4: per 16 weights a UE4M3 scale of amax / 6 (E2M1's largest value).
void encodeNvfp4(const float* src, std::uint8_t* dst, std::int64_t n, const float*) {
    for (std::int64_t b = 0; b < n / 64; ++b, dst += 36) {
        for (int s = 0; s < 4; ++s, src += 16) {
            const std::uint8_t ue = floatToUe4m3(absMax(src, 16) / 6.0f);
            const float scale = io::ggml::ue4m3HalfToFloat(ue);
            dst[s] = ue;
            for (int j = 0; j < 8; ++j)
                dst[4 + 8 * s + j] =
                    static_cast<std::uint8_t>(nearestFp4(src[j], scale) | (nearestFp4(src[j + 8], scale) << 4));
        }
    }
}

}  // namespace qs::quant::ggml
