// The K-quant encoders (layouts in core/io/ggml_decode_k.cpp). For each super-block of 256 weights:
//   1. each sub-block's scale (and min) minimising its weighted squared error (ggml_block_search.h),
//      the error weights being the importance weights when given, else 1;
//   2. the sub-block scales (and mins) quantized to the format's few bits against the super-block's
//      F16 scale, weighted by each sub-block's total error weight;
//   3. every weight rounded again against its sub-block's scale as decoded (F16 and integer parts), so
//      the codes fit the scales the decoder will actually use.
// This is the procedure of ggml's quantize_q*_K with an importance matrix; ggml's reference path
// (no importance) uses ad-hoc weights (|x| + rms, or x^2) where we use the plain squared error.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "qs/io/dtype.h"
#include "qs/io/ggml_blocks.h"

#include "ggml_block_search.h"
#include "ggml_encoders.h"

namespace qs::quant::ggml {
namespace {

using io::ggml::kSuperBlock;
constexpr int kQk = kSuperBlock;

float roundTripHalf(std::uint8_t* p, float v) {
    io::ggml::writeU16(p, io::f32ToF16(v));
    return io::ggml::readHalf(p);
}

// Codes 0..3 of 256 weights into 64 bytes: weight 128h + 32s + l at bits 2s of byte 32h + l.
void packTwoBits(const std::uint8_t* L, std::uint8_t* qs) {
    for (int h = 0; h < 2; ++h)
        for (int l = 0; l < 32; ++l) {
            const std::uint8_t* q = L + 128 * h + l;
            qs[32 * h + l] = static_cast<std::uint8_t>(q[0] | (q[32] << 2) | (q[64] << 4) | (q[96] << 6));
        }
}

// l = round((x + ml) / dl) in [0, nmax] for the `size` weights of one sub-block (dl != 0).
void requantizeSubBlock(const float* x, int size, float dl, float ml, int nmax, std::uint8_t* L) {
    const float id = 1.0f / dl;
    std::int32_t codes[32];  // int32 first: float -> int32 converts in vectors
#pragma omp simd
    for (int i = 0; i < size; ++i)
        codes[i] = static_cast<std::int32_t>(clampTo(roundHalfEven((x[i] + ml) * id), 0.0f, static_cast<float>(nmax)));
    for (int i = 0; i < size; ++i) L[i] = static_cast<std::uint8_t>(codes[i]);
}

// Step 3 for the asymmetric types: l = round((x + m) / d) in [0, nmax] per sub-block of `size`.
void requantizeAsymmetric(const float* x, int size, float d, const std::uint8_t* ls, float dmin, const std::uint8_t* lm,
                          int nmax, std::uint8_t* L) {
    for (int j = 0; j < kQk / size; ++j) {
        const float dl = d * static_cast<float>(ls[j]);
        if (dl == 0.0f) continue;  // every code decodes to -m: keep the fitted ones
        const float ml = dmin * static_cast<float>(lm[j]);
        requantizeSubBlock(x + size * j, size, dl, ml, nmax, L + size * j);
    }
}

// The asymmetric fits of `count` sub-blocks of `size` as positive scales and mins (what step 2
// quantizes), with each sub-block's total error weight.
void splitFits(const AsymmetricFit* fits, const float* w, int count, int size, float* scales, float* mins, float* sw) {
    for (int j = 0; j < count; ++j) {
        scales[j] = fits[j].scale;
        mins[j] = -fits[j].min;
        sw[j] = 0.0f;
        for (int i = 0; i < size; ++i) sw[j] += w[size * j + i];
    }
}

// Steps 1 and 2 for Q4_K / Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins.
void fitScaleMinK4(const float* x, const float* w, int nmax, const TrialGrid& grid, std::uint8_t* block,
                   std::uint8_t* L, float& d, float& dmin, std::uint8_t* ls, std::uint8_t* lm) {
    float scales[8], mins[8], sw[8];
    AsymmetricFit fits[8];
    fitAsymmetric(x, w, 8, 32, nmax, grid, L, fits);
    splitFits(fits, w, 8, 32, scales, mins, sw);
    const float dScale = fitPositive(scales, sw, 8, 63, ls);
    const float dMin = fitPositive(mins, sw, 8, 63, lm);
    io::ggml::packScaleMinK4(ls, lm, block + 4);
    d = roundTripHalf(block, dScale);
    dmin = roundTripHalf(block + 2, dMin);
}

// Step 1 for Q3_K / Q6_K: 16 sub-blocks of 16 with codes -nmax..nmax-1 (stored + nmax), their
// scales and total error weights.
void fitSymmetricSubBlocks(const float* x, const float* w, int nmax, std::uint8_t* L, float* scales, float* sw) {
    fitSymmetric(x, w, 8, 16, nmax, 9, L, scales);
    fitSymmetric(x + 128, w + 128, 8, 16, nmax, 9, L + 128, scales + 8);
    for (int j = 0; j < 16; ++j) {
        sw[j] = 0.0f;
        for (int i = 0; i < 16; ++i) sw[j] += w[16 * j + i];
    }
}

// Step 4 for Q4_K / Q5_K: with the codes fixed, a sub-block's 6-bit scale and min each move by one
// step where that lowers its weighted error (computed from five sums, no pass per candidate); the
// sub-blocks that moved are rounded again. Undoes most of what rounding the scales to 6 bits cost.
void refineScaleMinK4(const float* x, const float* w, int nmax, float d, float dmin, std::uint8_t* ls, std::uint8_t* lm,
                      std::uint8_t* L, std::uint8_t* packed) {
    bool moved = false;
    for (int j = 0; j < 8; ++j) {
        float acc[6][kLanes] = {};  // sum w, wx, wx^2, wl, wl^2, wxl in fixed lanes
        for (int i0 = 32 * j; i0 < 32 * (j + 1); i0 += kLanes)
#pragma omp simd
            for (int k = 0; k < kLanes; ++k) {
                const float wi = w[i0 + k], xi = x[i0 + k], li = L[i0 + k];
                acc[0][k] += wi;
                acc[1][k] += wi * xi;
                acc[2][k] += wi * xi * xi;
                acc[3][k] += wi * li;
                acc[4][k] += wi * li * li;
                acc[5][k] += wi * xi * li;
            }
        const double sw = sumLanes(acc[0]), swx = sumLanes(acc[1]), swx2 = sumLanes(acc[2]), swl = sumLanes(acc[3]),
                     swl2 = sumLanes(acc[4]), swxl = sumLanes(acc[5]);
        auto error = [&](int a, int b) {
            const double s = double(d) * a, m = -double(dmin) * b;
            return swx2 - 2 * s * swxl - 2 * m * swx + s * s * swl2 + 2 * s * m * swl + m * m * sw;
        };
        int bestA = ls[j], bestB = lm[j];
        double best = error(bestA, bestB);
        for (int a = std::max(0, ls[j] - 1); a <= std::min(63, ls[j] + 1); ++a)
            for (int b = std::max(0, lm[j] - 1); b <= std::min(63, lm[j] + 1); ++b) {
                const double e = error(a, b);
                if (e < best) best = e, bestA = a, bestB = b;
            }
        if (bestA == ls[j] && bestB == lm[j]) continue;
        ls[j] = static_cast<std::uint8_t>(bestA);
        lm[j] = static_cast<std::uint8_t>(bestB);
        moved = true;
        const float dl = d * static_cast<float>(bestA), ml = dmin * static_cast<float>(bestB);
        if (dl == 0.0f) continue;
        requantizeSubBlock(x + 32 * j, 32, dl, ml, nmax, L + 32 * j);
    }
    if (moved) io::ggml::packScaleMinK4(ls, lm, packed);
}

void superBlockWeights(const float* importance, std::int64_t b, float* w) {
    for (int j = 0; j < kQk; j += 16) groupWeights(importance ? importance + b * kQk + j : nullptr, 16, w + j);
}

// Steps 1 to 4 for Q4_K / Q5_K super-block b: d, dmin and the scales written to the block, the codes
// to L.
void encodeScaleMinK4(const float* src, const float* importance, std::int64_t b, int nmax, const TrialGrid& grid,
                      std::uint8_t* block, std::uint8_t* L) {
    float w[kQk], d, dmin;
    std::uint8_t ls[8], lm[8];
    superBlockWeights(importance, b, w);
    fitScaleMinK4(src, w, nmax, grid, block, L, d, dmin, ls, lm);
    requantizeAsymmetric(src, 32, d, ls, dmin, lm, nmax, L);
    refineScaleMinK4(src, w, nmax, d, dmin, ls, lm, L, block + 4);
}

}  // namespace

// Q2_K: 16 sub-blocks of 16, codes 0..3, 4-bit scales and mins.
void encodeQ2_K(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance) {
    constexpr int bytes = 84;
    for (std::int64_t b = 0; b < n / kQk; ++b, src += kQk, dst += bytes) {
        float w[kQk], scales[16], mins[16], sw[16];
        std::uint8_t L[kQk], ls[16], lm[16];
        superBlockWeights(importance, b, w);
        AsymmetricFit fits[16];
        fitAsymmetric(src, w, 8, 16, 3, kFineGrid, L, fits);
        fitAsymmetric(src + 128, w + 128, 8, 16, 3, kFineGrid, L + 128, fits + 8);
        splitFits(fits, w, 16, 16, scales, mins, sw);
        const float dScale = fitPositive(scales, sw, 16, 15, ls);
        const float dMin = fitPositive(mins, sw, 16, 15, lm);
        for (int j = 0; j < 16; ++j) dst[j] = static_cast<std::uint8_t>(ls[j] | (lm[j] << 4));
        const float d = roundTripHalf(dst + 80, dScale);
        const float dmin = roundTripHalf(dst + 82, dMin);
        requantizeAsymmetric(src, 16, d, ls, dmin, lm, 3, L);
        packTwoBits(L, dst + 16);
    }
}

// Q3_K: 16 sub-blocks of 16, codes -4..3, 6-bit signed scales.
void encodeQ3_K(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance) {
    constexpr int bytes = 110;
    for (std::int64_t b = 0; b < n / kQk; ++b, src += kQk, dst += bytes) {
        float w[kQk], scales[16], sw[16];
        std::uint8_t L[kQk], ls[16];
        superBlockWeights(importance, b, w);
        fitSymmetricSubBlocks(src, w, 4, L, scales, sw);
        const float dScale = fitSymmetric(scales, sw, 16, 32, 9, ls);
        int sc[16];
        for (int j = 0; j < 16; ++j) sc[j] = ls[j] - 32;
        io::ggml::packScalesQ3K(sc, dst + 96);
        const float d = roundTripHalf(dst + 108, dScale);
        for (int j = 0; j < 16; ++j) {
            const float dl = d * static_cast<float>(sc[j]);
            if (dl == 0.0f) continue;
            const float id = 1.0f / dl;
            for (int i = 16 * j; i < 16 * (j + 1); ++i)
                L[i] = static_cast<std::uint8_t>(std::clamp(nearestInt(src[i] * id), -4, 3) + 4);
        }
        std::memset(dst, 0, 32);  // hmask: the third bit of weight i is bit i / 32 of byte i % 32
        for (int i = 0; i < kQk; ++i)
            if (L[i] > 3) {
                dst[i % 32] = static_cast<std::uint8_t>(dst[i % 32] | (1 << (i / 32)));
                L[i] = static_cast<std::uint8_t>(L[i] - 4);
            }
        packTwoBits(L, dst + 32);
    }
}

// Q4_K: 8 sub-blocks of 32, codes 0..15.
void encodeQ4_K(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance) {
    constexpr int bytes = 144;
    for (std::int64_t b = 0; b < n / kQk; ++b, src += kQk, dst += bytes) {
        std::uint8_t L[kQk];
        encodeScaleMinK4(src, importance, b, 15, kCoarseGrid, dst, L);
        for (int g = 0; g < 4; ++g)
            for (int l = 0; l < 32; ++l)
                dst[16 + 32 * g + l] = static_cast<std::uint8_t>(L[64 * g + l] | (L[64 * g + 32 + l] << 4));
    }
}

// Q5_K: as Q4_K with codes 0..31, the fifth bits in qh.
void encodeQ5_K(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance) {
    constexpr int bytes = 176;
    for (std::int64_t b = 0; b < n / kQk; ++b, src += kQk, dst += bytes) {
        std::uint8_t L[kQk];
        encodeScaleMinK4(src, importance, b, 31, kFineGrid, dst, L);
        std::uint8_t* qh = dst + 16;
        std::uint8_t* qs = dst + 48;
        std::memset(qh, 0, 32);
        for (int g = 0; g < 4; ++g)
            for (int l = 0; l < 32; ++l) {
                const int lo = L[64 * g + l], hi = L[64 * g + 32 + l];
                qs[32 * g + l] = static_cast<std::uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
                qh[l] = static_cast<std::uint8_t>(qh[l] | ((lo >> 4) << (2 * g)) | ((hi >> 4) << (2 * g + 1)));
            }
    }
}

// Q6_K: 16 sub-blocks of 16, codes -32..31, int8 scales.
void encodeQ6_K(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance) {
    constexpr int bytes = 210;
    for (std::int64_t b = 0; b < n / kQk; ++b, src += kQk, dst += bytes) {
        float w[kQk], scales[16], sw[16];
        std::uint8_t L[kQk], ls[16];
        superBlockWeights(importance, b, w);
        fitSymmetricSubBlocks(src, w, 32, L, scales, sw);
        std::memset(dst, 0, bytes);
        const float dScale = fitSymmetric(scales, sw, 16, 128, 9, ls);
        if (dScale == 0.0f) continue;  // an all-zero super-block: zero scales and d
        auto* sc = reinterpret_cast<std::int8_t*>(dst + 192);
        for (int j = 0; j < 16; ++j) sc[j] = static_cast<std::int8_t>(ls[j] - 128);
        const float d = roundTripHalf(dst + 208, dScale);
        for (int j = 0; j < 16; ++j) {
            const float dl = d * static_cast<float>(sc[j]);
            if (dl == 0.0f) continue;
            const float id = 1.0f / dl;
            for (int i = 16 * j; i < 16 * (j + 1); ++i)
                L[i] = static_cast<std::uint8_t>(std::clamp(nearestInt(src[i] * id), -32, 31) + 32);
        }
        for (int h = 0; h < 2; ++h)
            for (int l = 0; l < 32; ++l) {
                const std::uint8_t* q = L + 128 * h + l;
                dst[64 * h + l] = static_cast<std::uint8_t>((q[0] & 0xF) | ((q[64] & 0xF) << 4));
                dst[64 * h + 32 + l] = static_cast<std::uint8_t>((q[32] & 0xF) | ((q[96] & 0xF) << 4));
                dst[128 + 32 * h + l] = static_cast<std::uint8_t>((q[0] >> 4) | ((q[32] >> 4) << 2) |
                                                                  ((q[64] >> 4) << 4) | ((q[96] >> 4) << 6));
            }
    }
}

}  // namespace qs::quant::ggml
