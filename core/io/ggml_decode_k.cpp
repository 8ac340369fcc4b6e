// The K-quants: super-blocks of 256 weights in sub-blocks of 16 or 32, each sub-block with its own
// small integer scale (and min) that multiplies the super-block's F16 scale d (and dmin).
// docs/formats/gguf-types.md has the byte layouts; the comment of each decoder says which bits hold a
// weight's code. Weights are written in order, each product rounded on its own (no FMA), as ggml's C.
#include "qs/io/ggml_blocks.h"

#include "ggml_decoders.h"

namespace qs::io::ggml {
namespace {
constexpr int kQk = kSuperBlock;
}  // namespace

// Q2_K (84 bytes): scales[16] (low nibble: scale, high nibble: min), qs[64], d, dmin. Weight
// 128h + 32s + l (l < 32) is bits 2s..2s+1 of qs[32h + l], in sub-block 8h + 2s + l/16;
// w = d*scale * q - dmin*min.
void decodeQ2_K(const std::uint8_t* src, float* dst, std::int64_t n) {
    constexpr int bytes = kQk / 16 + kQk / 4 + 4;
    for (std::int64_t b = 0; b < n / kQk; ++b, src += bytes) {
        const std::uint8_t* scales = src;
        const float d = readHalf(src + 80);
        const float dmin = readHalf(src + 82);
        for (int h = 0; h < 2; ++h) {
            const std::uint8_t* qs = src + 16 + 32 * h;
            for (int s = 0; s < 4; ++s) {
                for (int half = 0; half < 2; ++half, dst += 16) {
                    const std::uint8_t sc = scales[8 * h + 2 * s + half];
                    const float dl = d * static_cast<float>(sc & 0xF);
                    const float ml = dmin * static_cast<float>(sc >> 4);
                    const std::uint8_t* q = qs + 16 * half;
#pragma omp simd
                    for (int l = 0; l < 16; ++l) dst[l] = dl * static_cast<float>((q[l] >> (2 * s)) & 3) - ml;
                }
            }
        }
    }
}

// Q3_K (110 bytes): hmask[32], qs[64], scales[12] (16 six-bit scales, +32), d. Weight 128h + 32s + l
// has its low 2 bits as Q2_K's and its third bit in bit 4h + s of hmask[l]; a clear third bit means
// q - 4: w = d*scale * (low - (bit ? 0 : 4)).
void decodeQ3_K(const std::uint8_t* src, float* dst, std::int64_t n) {
    constexpr int bytes = kQk / 8 + kQk / 4 + 12 + 2;
    int scales[16];
    for (std::int64_t b = 0; b < n / kQk; ++b, src += bytes) {
        const std::uint8_t* hmask = src;
        const float d = readHalf(src + 108);
        unpackScalesQ3K(src + 96, scales);
        for (int h = 0; h < 2; ++h) {
            const std::uint8_t* qs = src + 32 + 32 * h;
            for (int s = 0; s < 4; ++s, dst += 32) {
                const int bit = 4 * h + s;
                int q[32];  // the 32 codes first (integer work), then two scales: both loops vectorise
                for (int l = 0; l < 32; ++l) q[l] = ((qs[l] >> (2 * s)) & 3) - 4 + 4 * ((hmask[l] >> bit) & 1);
                const float dl0 = d * static_cast<float>(scales[8 * h + 2 * s]);
                const float dl1 = d * static_cast<float>(scales[8 * h + 2 * s + 1]);
#pragma omp simd
                for (int l = 0; l < 16; ++l) dst[l] = dl0 * static_cast<float>(q[l]);
#pragma omp simd
                for (int l = 16; l < 32; ++l) dst[l] = dl1 * static_cast<float>(q[l]);
            }
        }
    }
}

// Q4_K (144 bytes): d, dmin, scales[12] (unpackScaleMinK4), qs[128]. Weight 64g + l is the low nibble,
// weight 64g + 32 + l the high nibble of qs[32g + l]; w = d*scale * q - dmin*min.
// Q5_K (176 bytes): the same fields with qh[32] before qs[128]; the fifth bit of weight 64g + l is bit
// 2g of qh[l], of weight 64g + 32 + l bit 2g + 1.
namespace {
template <bool kFifthBit>
void decodeScaleMinK4(const std::uint8_t* src, float* dst, std::int64_t n) {
    constexpr int qsAt = kFifthBit ? 48 : 16;
    constexpr int bytes = qsAt + kQk / 2;
    for (std::int64_t b = 0; b < n / kQk; ++b, src += bytes) {
        const float d = readHalf(src);
        const float dmin = readHalf(src + 2);
        const std::uint8_t* qh = src + 16;
        const std::uint8_t* qs = src + qsAt;
        for (int g = 0; g < 4; ++g, qs += 32) {
            for (int half = 0; half < 2; ++half, dst += 32) {
                std::uint8_t sc, m;
                unpackScaleMinK4(2 * g + half, src + 4, sc, m);
                const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
                const int bit = 2 * g + half;
                for (int l = 0; l < 32; ++l) {
                    int q = (qs[l] >> (4 * half)) & 0xF;
                    if constexpr (kFifthBit) q |= ((qh[l] >> bit) & 1) << 4;
                    dst[l] = dl * static_cast<float>(q) - ml;
                }
            }
        }
    }
}
}  // namespace

void decodeQ4_K(const std::uint8_t* src, float* dst, std::int64_t n) { decodeScaleMinK4<false>(src, dst, n); }
void decodeQ5_K(const std::uint8_t* src, float* dst, std::int64_t n) { decodeScaleMinK4<true>(src, dst, n); }

// Q6_K (210 bytes): ql[128], qh[64], scales[16] (int8), d. In half h (128 weights), weight
// 128h + 32k + l (k < 4, l < 32) takes its low 4 bits from ql[64h + l + 32(k%2)] (low nibble for
// k < 2, high nibble otherwise) and its top 2 bits from bits 2k..2k+1 of qh[32h + l];
// w = (d * scale[8h + 2k + l/16]) * (q - 32).
void decodeQ6_K(const std::uint8_t* src, float* dst, std::int64_t n) {
    constexpr int bytes = kQk / 2 + kQk / 4 + kQk / 16 + 2;
    for (std::int64_t b = 0; b < n / kQk; ++b, src += bytes) {
        const float d = readHalf(src + 208);
        const auto* scales = reinterpret_cast<const std::int8_t*>(src + 192);
        for (int h = 0; h < 2; ++h) {
            const std::uint8_t* ql = src + 64 * h;
            const std::uint8_t* qh = src + 128 + 32 * h;
            for (int k = 0; k < 4; ++k) {
                const std::uint8_t* low = ql + 32 * (k % 2);
                const int shift = k < 2 ? 0 : 4;
                for (int half = 0; half < 2; ++half, dst += 16) {
                    const float ds = d * static_cast<float>(scales[8 * h + 2 * k + half]);
                    const int o = 16 * half;
                    for (int l = 0; l < 16; ++l) {
                        const int q = ((low[o + l] >> shift) & 0xF) | (((qh[o + l] >> (2 * k)) & 3) << 4);
                        dst[l] = ds * static_cast<float>(q - 32);
                    }
                }
            }
        }
    }
}

}  // namespace qs::io::ggml
