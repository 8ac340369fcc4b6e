// The 4-bit types whose codes index a table of 16 levels rather than an integer grid: IQ4_NL and
// IQ4_XS (kIq4nlValues, a non-uniform grid fitted to weights) and MXFP4 / NVFP4 (E2M1 floats, stored
// doubled in kFp4TwiceValues, with scales that carry the 1/2). Weight j of a 32-weight group is the low
// nibble, weight j + 16 the high nibble of byte j (for NVFP4's 16-weight groups: j and j + 8).
#include "qs/io/ggml_blocks.h"

#include "ggml_decoders.h"

namespace qs::io::ggml {
namespace {

// 16 bytes of codes -> 32 weights: level[code] * scale.
template <typename Level>
inline void nibbles32(const std::uint8_t* qs, const Level* levels, float scale, float* out) {
#pragma omp simd
    for (int j = 0; j < 16; ++j) {
        out[j] = scale * static_cast<float>(levels[qs[j] & 0xF]);
        out[j + 16] = scale * static_cast<float>(levels[qs[j] >> 4]);
    }
}

}  // namespace

// IQ4_NL (18 bytes): d (F16), qs[16]; w = d * kIq4nlValues[q].
void decodeIq4Nl(const std::uint8_t* src, float* dst, std::int64_t n) {
    for (std::int64_t b = 0; b < n / 32; ++b, src += 18, dst += 32)
        nibbles32(src + 2, kIq4nlValues, readHalf(src), dst);
}

// IQ4_XS (136 bytes): d (F16), scales_h (u16: 2 bits per group), scales_l[4] (a nibble per group),
// qs[128]; group g of 32 has the 6-bit scale ls = nibble | (2 bits << 4) and w = d*(ls - 32) * level.
void decodeIq4Xs(const std::uint8_t* src, float* dst, std::int64_t n) {
    constexpr int bytes = 2 + 2 + kSuperBlock / 64 + kSuperBlock / 2;
    for (std::int64_t b = 0; b < n / kSuperBlock; ++b, src += bytes) {
        const float d = readHalf(src);
        const std::uint16_t scalesHigh = readU16(src + 2);
        const std::uint8_t* scalesLow = src + 4;
        for (int g = 0; g < kSuperBlock / 32; ++g, dst += 32) {
            const int ls = ((scalesLow[g / 2] >> (4 * (g % 2))) & 0xF) | (((scalesHigh >> (2 * g)) & 3) << 4);
            nibbles32(src + 8 + 16 * g, kIq4nlValues, d * static_cast<float>(ls - 32), dst);
        }
    }
}

// MXFP4 (17 bytes): e (E8M0), qs[16]; w = e2m1(q) * 2^(e-127) = kFp4TwiceValues[q] * 2^(e-128).
void decodeMxfp4(const std::uint8_t* src, float* dst, std::int64_t n) {
    for (std::int64_t b = 0; b < n / 32; ++b, src += 17, dst += 32)
        nibbles32(src + 1, kFp4TwiceValues, e8m0HalfToFloat(src[0]), dst);
}

// NVFP4 (36 bytes, 64 weights): d[4] (UE4M3, one per 16 weights), qs[32] (8 bytes per 16 weights).
// ggml's own layout: no tensor-wide FP32 scale (unlike NVIDIA's ModelOpt checkpoints).
void decodeNvfp4(const std::uint8_t* src, float* dst, std::int64_t n) {
    for (std::int64_t b = 0; b < n / 64; ++b, src += 36) {
        for (int s = 0; s < 4; ++s, dst += 16) {
            const float d = ue4m3HalfToFloat(src[s]);
            const std::uint8_t* qs = src + 4 + 8 * s;
#pragma omp simd
            for (int j = 0; j < 8; ++j) {
                dst[j] = static_cast<float>(kFp4TwiceValues[qs[j] & 0xF]) * d;
                dst[j + 8] = static_cast<float>(kFp4TwiceValues[qs[j] >> 4]) * d;
            }
        }
    }
}

}  // namespace qs::io::ggml
