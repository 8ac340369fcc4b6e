// IQ4_NL and IQ4_XS (layouts in core/io/ggml_decode_fp4.cpp): each weight becomes the nearest of the
// 16 non-uniform levels kIq4nlValues times its group's scale. Per group of 32, the scale is searched
// as ggml's quantize_row_iq4_nl_impl does: 15 trial scales around the one that puts the group's
// largest-magnitude weight on the outermost level, each followed by the least-squares scale of its
// rounding, the best kept. Errors are weighted by the importance weights when given, else equally
// (ggml weights by x^2 there). IQ4_XS then stores each group's scale as a 6-bit multiple of a
// super-block F16 scale and rounds the weights again against the scale as decoded.
#include <algorithm>
#include <cmath>

#include "qs/io/dtype.h"
#include "qs/io/ggml_blocks.h"

#include "ggml_block_search.h"
#include "ggml_encoders.h"

namespace qs::quant::ggml {
namespace {

using io::ggml::kIq4nlValues;
constexpr int kGroup = 32;
constexpr int kTrials = 7;  // trial scales (values[0] + t) / max for t in -7..7

// Index of the level nearest to v (the upper one on ties): the number of midpoints at or below v.
struct Iq4Levels {
    float value[16];
    float mid[15];
    Iq4Levels() {
        for (int k = 0; k < 16; ++k) value[k] = kIq4nlValues[k];
        for (int k = 0; k < 15; ++k) mid[k] = 0.5f * (value[k] + value[k + 1]);
    }
    int nearest(float v) const {
        int index = 0;
        for (float m : mid) index += v >= m ? 1 : 0;
        return index;
    }
};
const Iq4Levels kLevels;

// The best scale of a group of 32 (0 for an all-zero group), and its codes for that scale.
float fitGroup(const float* x, const float* w, std::uint8_t* L) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kGroup; ++j)
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    if (amax < 1e-15f) {
        std::fill(L, L + kGroup, static_cast<std::uint8_t>(kLevels.nearest(0.0f)));
        return 0.0f;
    }
    // Least-squares scale of the rounding at inverse scale id: sumqx / sumq2, error -sumqx^2 / sumq2.
    auto trial = [&](float id, float& sumqx, float& sumq2) {
        float a[kLanes] = {}, b[kLanes] = {};
        for (int i0 = 0; i0 < kGroup; i0 += kLanes)
#pragma omp simd
            for (int k = 0; k < kLanes; ++k) {
                const float q = kLevels.value[kLevels.nearest(id * x[i0 + k])];
                const float wq = w[i0 + k] * q;
                a[k] += wq * x[i0 + k];
                b[k] += wq * q;
            }
        sumqx = sumLanes(a), sumq2 = sumLanes(b);
    };
    float sumqx, sumq2;
    float bestId = -kLevels.value[0] / max;  // the largest magnitude lands near the top level
    trial(bestId, sumqx, sumq2);
    float d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int t = -kTrials; t <= kTrials; ++t) {
        const float id = (static_cast<float>(t) + kLevels.value[0]) / max;
        trial(id, sumqx, sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kGroup; ++j) L[j] = static_cast<std::uint8_t>(kLevels.nearest(id * x[j]));
    return d;
}

void packGroup(const std::uint8_t* L, std::uint8_t* qs) {
    for (int j = 0; j < 16; ++j) qs[j] = static_cast<std::uint8_t>(L[j] | (L[j + 16] << 4));
}

}  // namespace

void encodeIq4Nl(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance) {
    for (std::int64_t b = 0; b < n / kGroup; ++b, src += kGroup, dst += 18) {
        float w[kGroup];
        std::uint8_t L[kGroup];
        groupWeights(importance ? importance + b * kGroup : nullptr, kGroup, w);
        const float d = fitGroup(src, w, L);
        io::ggml::writeU16(dst, io::f32ToF16(d));
        packGroup(L, dst + 2);
    }
}

void encodeIq4Xs(const float* src, std::uint8_t* dst, std::int64_t n, const float* importance) {
    constexpr int kQk = io::ggml::kSuperBlock;
    constexpr int kGroups = kQk / kGroup;
    for (std::int64_t b = 0; b < n / kQk; ++b, src += kQk, dst += 136) {
        float w[kQk], scales[kGroups], sw[kGroups];
        std::uint8_t L[kQk], ls[kGroups];
        for (int g = 0; g < kGroups; ++g) {
            groupWeights(importance ? importance + b * kQk + g * kGroup : nullptr, kGroup, w + g * kGroup);
            scales[g] = fitGroup(src + g * kGroup, w + g * kGroup, L + g * kGroup);
            sw[g] = 0.0f;
            for (int j = 0; j < kGroup; ++j) sw[g] += w[g * kGroup + j];
        }
        // 6-bit signed group scales (-32..31) under the super-block scale d.
        const float dScale = fitSymmetric(scales, sw, kGroups, 32, 9, ls);
        io::ggml::writeU16(dst, io::f32ToF16(dScale));
        const float d = io::ggml::readHalf(dst);
        std::uint16_t scalesHigh = 0;
        for (int g = 0; g < kGroups; ++g) {
            const float dl = d * static_cast<float>(ls[g] - 32);
            const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
            for (int j = g * kGroup; j < (g + 1) * kGroup; ++j)
                L[j] = static_cast<std::uint8_t>(kLevels.nearest(idl * src[j]));
            if (g % 2 == 0)
                dst[4 + g / 2] = static_cast<std::uint8_t>(ls[g] & 0xF);
            else
                dst[4 + g / 2] = static_cast<std::uint8_t>(dst[4 + g / 2] | ((ls[g] & 0xF) << 4));
            scalesHigh = static_cast<std::uint16_t>(scalesHigh | ((ls[g] >> 4) << (2 * g)));
            packGroup(L + g * kGroup, dst + 8 + 16 * g);
        }
        io::ggml::writeU16(dst + 2, scalesHigh);
    }
}

}  // namespace qs::quant::ggml
