// Q4_0, Q4_1, Q5_0, Q5_1 (layouts in ggml_decode_legacy.cpp). Without importance weights: bit for bit
// ggml's reference quantizers (quantize_row_*_ref), which set the scale from the block's range and
// round each weight. With importance weights: the scale (and offset) minimising the importance-weighted
// squared error, searched as ggml's quantize_q*_* does (ggml_block_search.h).
// Built without FMA contraction (see CMakeLists): x * id + 8.5 must round twice, as in ggml.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "qs/io/dtype.h"
#include "qs/io/ggml_blocks.h"

#include "ggml_block_search.h"
#include "ggml_encoders.h"

namespace qs::quant::ggml {
namespace {

constexpr int kBlock = 32;
constexpr int kHalf = kBlock / 2;

void writeHalf(std::uint8_t* p, float v) { io::ggml::writeU16(p, io::f32ToF16(v)); }

// Codes 0..15 (or the low nibbles of 0..31): weight j in the low, weight j + 16 in the high nibble.
void packNibbles(const int* codes, std::uint8_t* qs) {
    for (int j = 0; j < kHalf; ++j)
        qs[j] = static_cast<std::uint8_t>((codes[j] & 0xF) | ((codes[j + kHalf] & 0xF) << 4));
}
void packFifthBits(const int* codes, std::uint8_t* qh) {
    std::uint32_t bits = 0;
    for (int j = 0; j < kBlock; ++j) bits |= static_cast<std::uint32_t>((codes[j] >> 4) & 1) << j;
    io::ggml::writeU32(qh, bits);
}

// The element of largest magnitude, the first one on ties (its sign sets the sign of the scale).
float signedAbsMax(const float* x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kBlock; ++j)
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    return max;
}

// Symmetric reference: d = max / -levels, code = min(top, trunc(x / d + levels + 0.5)).
void referenceSymmetric(const float* x, int levels, float& d, int* codes) {
    d = signedAbsMax(x) / static_cast<float>(-levels);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const float offset = static_cast<float>(levels) + 0.5f;
    for (int j = 0; j < kBlock; ++j)
        codes[j] = std::min(2 * levels - 1, static_cast<int>(static_cast<std::int8_t>(x[j] * id + offset)));
}

// Offset reference: m = min, d = (max - min) / top, code = trunc((x - min) / d + 0.5).
void referenceOffset(const float* x, int top, bool clampTop, float& d, float& m, int* codes) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < kBlock; ++j) {
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    d = (hi - lo) / static_cast<float>(top);
    m = lo;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kBlock; ++j) {
        const int c = static_cast<int>(static_cast<std::uint8_t>((x[j] - lo) * id + 0.5f));
        codes[j] = clampTop ? std::min(top, c) : c;
    }
}

// Importance-weighted fits: the codes and scale (and offset) of least importance-weighted error.
// Up to kBatch blocks at once (the batched search's lanes).
void weightedSymmetric(const float* x, const float* importance, int blocks, int levels, float* d,
                       int (*codes)[kBlock]) {
    float w[kBatch * kBlock];
    std::uint8_t L[kBatch * kBlock];
    for (int b = 0; b < blocks; ++b) groupWeights(importance + b * kBlock, kBlock, w + b * kBlock);
    fitSymmetric(x, w, blocks, kBlock, levels, 9, L, d);
    for (int b = 0; b < blocks; ++b)
        for (int j = 0; j < kBlock; ++j) codes[b][j] = L[b * kBlock + j];
}

// Q4_0 / Q5_0 blocks of `bytes`: the F16 scale, then the codes written by pack.
template <typename Pack>
void encodeSymmetricBlocks(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance, int levels,
                           int bytes, Pack pack) {
    float d[kBatch];
    int codes[kBatch][kBlock];
    for (std::int64_t b0 = 0; b0 < n / kBlock; b0 += kBatch) {
        const int blocks = static_cast<int>(std::min<std::int64_t>(kBatch, n / kBlock - b0));
        if (importance) {
            weightedSymmetric(src + b0 * kBlock, importance + b0 * kBlock, blocks, levels, d, codes);
        } else {
            for (int b = 0; b < blocks; ++b) referenceSymmetric(src + (b0 + b) * kBlock, levels, d[b], codes[b]);
        }
        for (int b = 0; b < blocks; ++b) {
            std::uint8_t* block = dst + (b0 + b) * bytes;
            writeHalf(block, d[b]);
            pack(codes[b], block + 2);
        }
    }
}

// Up to kBatch blocks at once (the batched search's lanes).
void weightedOffset(const float* x, const float* importance, int blocks, int top, float* d, float* m,
                    int (*codes)[kBlock]) {
    float w[kBatch * kBlock];
    std::uint8_t L[kBatch * kBlock];
    AsymmetricFit fits[kBatch];
    for (int b = 0; b < blocks; ++b) groupWeights(importance + b * kBlock, kBlock, w + b * kBlock);
    fitAsymmetric(x, w, blocks, kBlock, top, kFineGrid, L, fits);
    for (int b = 0; b < blocks; ++b) {
        d[b] = fits[b].scale;
        m[b] = fits[b].min;
        for (int j = 0; j < kBlock; ++j) codes[b][j] = L[b * kBlock + j];
    }
}

// Q4_1 / Q5_1 blocks of `bytes`, codes written by pack.
template <typename Pack>
void encodeOffsetBlocks(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance, int top,
                        bool clampTop, int bytes, Pack pack) {
    float d[kBatch], m[kBatch];
    int codes[kBatch][kBlock];
    for (std::int64_t b0 = 0; b0 < n / kBlock; b0 += kBatch) {
        const int blocks = static_cast<int>(std::min<std::int64_t>(kBatch, n / kBlock - b0));
        if (importance) {
            weightedOffset(src + b0 * kBlock, importance + b0 * kBlock, blocks, top, d, m, codes);
        } else {
            for (int b = 0; b < blocks; ++b)
                referenceOffset(src + (b0 + b) * kBlock, top, clampTop, d[b], m[b], codes[b]);
        }
        for (int b = 0; b < blocks; ++b) {
            std::uint8_t* block = dst + (b0 + b) * bytes;
            writeHalf(block, d[b]);
            writeHalf(block + 2, m[b]);
            pack(codes[b], block + 4);
        }
    }
}

}  // namespace

void encodeQ4_0(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance) {
    encodeSymmetricBlocks(src, dst, n, importance, 8, 2 + kHalf,
                          [](const int* codes, std::uint8_t* p) { packNibbles(codes, p); });
}

void encodeQ4_1(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance) {
    encodeOffsetBlocks(src, dst, n, importance, 15, true, 4 + kHalf,
                       [](const int* codes, std::uint8_t* p) { packNibbles(codes, p); });
}

void encodeQ5_0(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance) {
    encodeSymmetricBlocks(src, dst, n, importance, 16, 6 + kHalf, [](const int* codes, std::uint8_t* p) {
        packFifthBits(codes, p);
        packNibbles(codes, p + 4);
    });
}

void encodeQ5_1(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance) {
    encodeOffsetBlocks(src, dst, n, importance, 31, false, 8 + kHalf, [](const int* codes, std::uint8_t* p) {
        packFifthBits(codes, p);
        packNibbles(codes, p + 4);
    });
}

}  // namespace qs::quant::ggml
