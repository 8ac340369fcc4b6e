#pragma once
// The searches behind ggml's K-quant, IQ4 and importance-weighted encoders: for a small group of
// weights x with error weights w, the scale (and min) of an integer or table grid that minimises
// sum w (x - xhat)^2. Each candidate grid step is rounded, then the best scale for that rounding is
// solved in closed form and its error computed from the same sums (no second pass), so one candidate
// costs one pass over the group. The passes accumulate in fixed lanes (a lane per group, or 8 lanes
// of one group), which the compiler vectorises without reassociating floats: results do not depend
// on the CPU's vector width.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace qs::quant::ggml {

inline constexpr int kLanes = 8;

// Round to nearest, ties to even, as ggml's nearest_int; NaN gives 0 and huge values clamp, so bad
// input cannot overflow an int.
inline int nearestInt(float v) {
    if (!(std::fabs(v) < 4194303.0f)) return std::isnan(v) ? 0 : (v < 0 ? -4194303 : 4194303);
    return static_cast<int>(std::nearbyint(v));
}

// The error weights of a group: the importance weights when given, else 1 (plain squared error). A
// group whose importance is all zero falls back to 1, so it is still quantized sensibly.
inline void groupWeights(const float* importance, int n, float* w) {
    float sum = 0.0f;
    if (importance) {
        for (int i = 0; i < n; ++i) {  // NaN, negative and infinite weights count as 0
            const float v = importance[i];
            w[i] = (v > 0.0f) & (v <= std::numeric_limits<float>::max()) ? v : 0.0f;
        }
        for (int i = 0; i < n; ++i) sum += w[i];
    }
    if (!(sum > 0.0f)) std::fill(w, w + n, 1.0f);
}

// Round to nearest, ties to even, for |v| < 2^22: adding and removing 1.5 * 2^23 leaves no fraction
// bits. Larger magnitudes come back still beyond 2^22, which every caller's clamp to its code range
// absorbs. Plain float arithmetic, so loops of it vectorise on any x86 (nearbyint needs SSE4.1).
inline float roundHalfEven(float v) {
    constexpr float kMagic = 12582912.0f;
    return (v + kMagic) - kMagic;
}

// Clamp written as selects, which vectorise (std::clamp's references sometimes keep GCC from it).
inline float clampTo(float v, float lo, float hi) {
    const float up = v < lo ? lo : v;
    return up > hi ? hi : up;
}

// Pairwise, in a fixed order: ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)).
inline float sumLanes(const float (&acc)[kLanes]) {
    float h[4], q[2];
    for (int k = 0; k < 4; ++k) h[k] = acc[k] + acc[k + 4];
    for (int k = 0; k < 2; ++k) q[k] = h[k] + h[k + 2];
    return q[0] + q[1];
}

// The trial grid of fitAsymmetric: inverse scales (nmax + first + step * i) / range for i in
// 0..count, then `refinements` rounds of rounding to the best fit's own grid and refitting.
struct TrialGrid {
    float first;
    float step;
    int count;
    int refinements;
};
// ggml's grid for the K-quants with importance weights (make_qkx3_quants' -0.9, 0.05, 36), plus
// three refinement rounds.
inline constexpr TrialGrid kFineGrid{-0.9f, 0.05f, 36, 3};
// A sixth of the trials, the same refinement rounds: within 1 % of the fine grid's error on
// Gaussian and heavy-tailed weights, at a quarter of the cost (Q4_K, the type most often made).
inline constexpr TrialGrid kCoarseGrid{-0.9f, 0.3f, 6, 3};

struct AsymmetricFit {
    float scale = 0.0f;  // x ~ scale * l + min, l in [0, nmax]
    float min = 0.0f;    // <= 0
};

// Groups fitAsymmetric handles at once, one per SIMD lane.
inline constexpr int kBatch = 8;
inline constexpr int kMaxGroup = 32;

// ggml's make_qkx2/3_quants for `groups` (<= kBatch) consecutive groups of n (<= kMaxGroup, a
// multiple of 4) weights: codes l in [0, nmax] for x ~ scale * l + min with min <= 0, trying the
// inverse scales of `grid` after the plain range step nmax / (max - min). Each trial rounds from the
// best min found so far (not the data's minimum): once a fit has moved the min, as it does when an
// outlier stretches the range, later trials round the bulk of the group around it. The best scale
// and min of each rounding are the weighted least-squares solution, whose error follows from the same
// sums: error = sum w x^2 - G with G = num / den, so fits are compared by cross-multiplying (no
// division in the loop). The groups are transposed so that lane k of every vector is group k: a trial
// is one pass over n elements with no horizontal sums, which the compiler vectorises for any vector
// width. Writes the codes of each group's best fit to L (n per group) and the fits to `fits`.
inline void fitAsymmetric(const float* x, const float* w, int groups, int n, int nmax, const TrialGrid& grid,
                          std::uint8_t* L, AsymmetricFit* fits) {
    float xt[kMaxGroup][kBatch] = {}, wt[kMaxGroup][kBatch] = {};
    for (int k = 0; k < groups; ++k)
        for (int i = 0; i < n; ++i) {
            xt[i][k] = x[k * n + i];
            wt[i][k] = w[k * n + i];
        }
    float lo[kBatch], hi[kBatch];
    double sumW[kBatch], sumX[kBatch];
    for (int k = 0; k < kBatch; ++k) {
        lo[k] = hi[k] = xt[0][k];
        sumW[k] = sumX[k] = 0;
    }
    for (int i = 0; i < n; ++i)
#pragma omp simd
        for (int k = 0; k < kBatch; ++k) {
            lo[k] = xt[i][k] < lo[k] ? xt[i][k] : lo[k];
            hi[k] = xt[i][k] > hi[k] ? xt[i][k] : hi[k];
            sumW[k] += wt[i][k];
            sumX[k] += double(wt[i][k]) * xt[i][k];
        }
    const float fmax = static_cast<float>(nmax);

    // One pass: the sums of the codes of every group rounded at its inverse scale from its origin.
    // Four interleaved sets of sums (elements i % 4) keep four additions in flight instead of one
    // chain of n.
    constexpr int kChains = 4;
    float origin[kBatch], iscale[kBatch], sl[kBatch], sl2[kBatch], sxl[kBatch];
    auto pass = [&] {
        float a[kChains][kBatch] = {}, b[kChains][kBatch] = {}, c[kChains][kBatch] = {};
        for (int i0 = 0; i0 < n; i0 += kChains)
            for (int u = 0; u < kChains; ++u)
#pragma omp simd
                for (int k = 0; k < kBatch; ++k) {
                    const float xv = xt[i0 + u][k];
                    const float l = clampTo(roundHalfEven(iscale[k] * (xv - origin[k])), 0.0f, fmax);
                    const float wl = wt[i0 + u][k] * l;
                    a[u][k] += wl;
                    b[u][k] += wl * l;
                    c[u][k] += wl * xv;
                }
#pragma omp simd
        for (int k = 0; k < kBatch; ++k) {
            sl[k] = (a[0][k] + a[1][k]) + (a[2][k] + a[3][k]);
            sl2[k] = (b[0][k] + b[1][k]) + (b[2][k] + b[3][k]);
            sxl[k] = (c[0][k] + c[1][k]) + (c[2][k] + c[3][k]);
        }
    };

    // The plain range fit first, as ggml starts: scale range / nmax, min lo, its G written out.
    float bestIscale[kBatch], bestOrigin[kBatch], bestScale[kBatch];
    double bestNum[kBatch], bestDen[kBatch], bestSl[kBatch], bestSl2[kBatch], bestSxl[kBatch];
    double bestPlain[kBatch], bestClamped[kBatch];  // flags, 0 or 1 (doubles: one vector type in the loop)
    for (int k = 0; k < kBatch; ++k) {
        lo[k] = lo[k] < 0.0f ? lo[k] : 0.0f;
        const float range = hi[k] > lo[k] ? hi[k] - lo[k] : 1.0f;  // flat groups are finished below
        origin[k] = bestOrigin[k] = lo[k];
        iscale[k] = bestIscale[k] = fmax / range;
        bestScale[k] = range / fmax;
    }
    pass();
    for (int k = 0; k < kBatch; ++k) {
        const double s = bestScale[k], m = lo[k];
        bestNum[k] = 2 * s * sxl[k] + 2 * m * sumX[k] - s * s * sl2[k] - 2 * s * m * sl[k] - m * m * sumW[k];
        bestDen[k] = 1.0;
        bestPlain[k] = 1.0;
        bestClamped[k] = 0.0;
        bestSl[k] = sl[k], bestSl2[k] = sl2[k], bestSxl[k] = sxl[k];
    }
    // 1 / (max - origin) and 1 / best scale, updated only where a fit improves.
    float invRange[kBatch], refined[kBatch];
#pragma omp simd
    for (int k = 0; k < kBatch; ++k) {
        invRange[k] = 1.0f / (hi[k] > origin[k] ? hi[k] - origin[k] : 1.0f);
        refined[k] = bestIscale[k];
    }
    for (int step = 0; step <= grid.count + grid.refinements; ++step) {
        const float numerator = grid.first + grid.step * static_cast<float>(step) + fmax;
#pragma omp simd
        for (int k = 0; k < kBatch; ++k) iscale[k] = step <= grid.count ? numerator * invRange[k] : refined[k];
        pass();
// The least-squares fit of each rounding, branch-free so that it vectorises too. With the min
// free: G = (W sxl^2 - 2 X sl sxl + sl2 X^2) / det, det = W sl2 - sl^2; when that min would be
// positive it is held at 0: G = sxl^2 / sl2.
#pragma omp simd
        for (int k = 0; k < kBatch; ++k) {
            const double dl = sl[k], dl2 = sl2[k], dxl = sxl[k];
            const double det = sumW[k] * dl2 - dl * dl;
            const double minNum = dl2 * sumX[k] - dl * dxl;  // min * det
            const bool clamped = minNum > 0;
            const double num =
                clamped ? dxl * dxl : sumW[k] * dxl * dxl - 2 * sumX[k] * dl * dxl + dl2 * sumX[k] * sumX[k];
            const double den = clamped ? dl2 : det;
            const bool better = (det > 0) & (den > 0) & (num * bestDen[k] > bestNum[k] * den);
            // The new min is where the next trials round from; the scale seeds the refinements.
            const float inv = 1.0f / static_cast<float>(den > 0 ? den : 1.0);
            const float scale = static_cast<float>(clamped ? dxl : sumW[k] * dxl - sumX[k] * dl) * inv;
            const float min = clamped ? 0.0f : static_cast<float>(minNum) * inv;
            bestNum[k] = better ? num : bestNum[k];
            bestDen[k] = better ? den : bestDen[k];
            bestPlain[k] = better ? 0.0 : bestPlain[k];
            bestClamped[k] = better ? (clamped ? 1.0 : 0.0) : bestClamped[k];
            bestSl[k] = better ? dl : bestSl[k];
            bestSl2[k] = better ? dl2 : bestSl2[k];
            bestSxl[k] = better ? dxl : bestSxl[k];
            bestScale[k] = better ? scale : bestScale[k];
            bestIscale[k] = better ? iscale[k] : bestIscale[k];
            bestOrigin[k] = better ? origin[k] : bestOrigin[k];
            origin[k] = better ? min : origin[k];
            const float range = hi[k] > min ? hi[k] - min : 1.0f;
            invRange[k] = better ? 1.0f / range : invRange[k];
            refined[k] = better & (scale > 0.0f) ? 1.0f / (scale > 0.0f ? scale : 1.0f) : refined[k];
        }
    }
    for (int k = 0; k < groups; ++k) {
        const bool flat = !(hi[k] > lo[k]);
        double s = bestScale[k], m = bestOrigin[k];
        if (bestPlain[k] != 0.0) {
            m = lo[k];
        } else if (bestClamped[k] != 0.0) {
            s = bestSxl[k] / bestSl2[k];
            m = 0.0;
        } else {
            const double det = sumW[k] * bestSl2[k] - bestSl[k] * bestSl[k];
            s = (sumW[k] * bestSxl[k] - sumX[k] * bestSl[k]) / det;
            m = (bestSl2[k] * sumX[k] - bestSl[k] * bestSxl[k]) / det;
        }
        fits[k] = flat ? AsymmetricFit{0.0f, lo[k]} : AsymmetricFit{static_cast<float>(s), static_cast<float>(m)};
        if (flat) bestIscale[k] = 0.0f;  // every code 0
    }
    std::int32_t lt[kMaxGroup][kBatch];  // int32, not uint8: float -> int32 converts in vectors
    for (int i = 0; i < n; ++i)
#pragma omp simd
        for (int k = 0; k < kBatch; ++k)
            lt[i][k] = static_cast<std::int32_t>(
                clampTo(roundHalfEven(bestIscale[k] * (xt[i][k] - bestOrigin[k])), 0.0f, fmax));
    for (int k = 0; k < groups; ++k)
        for (int i = 0; i < n; ++i) L[k * n + i] = static_cast<std::uint8_t>(lt[i][k]);
}

// ggml's make_qx_quants (rmse_type 1) for `groups` (<= kBatch) consecutive groups of n (<= kMaxGroup,
// a multiple of 4) weights: codes l in [-nmax, nmax - 1] for x ~ scale * l, trying the inverse scales
// -(nmax + 0.1 i) / max for i in -steps..steps, where max is the group's element of largest magnitude
// (so it lands on -nmax), then two refinement rounds as fitAsymmetric's. The least-squares scale of a
// rounding is sxl / sl2 with error sum w x^2 - sxl^2 / sl2, so fits are compared by cross-multiplying.
// One group per SIMD lane, as fitAsymmetric. Writes l + nmax to L (n per group) and each group's
// scale (0 for an all-zero group) to scales.
inline void fitSymmetric(const float* x, const float* w, int groups, int n, int nmax, int steps, std::uint8_t* L,
                         float* scales) {
    float xt[kMaxGroup][kBatch] = {}, wt[kMaxGroup][kBatch] = {};
    for (int k = 0; k < groups; ++k)
        for (int i = 0; i < n; ++i) {
            xt[i][k] = x[k * n + i];
            wt[i][k] = w[k * n + i];
        }
    float amax[kBatch] = {}, max[kBatch] = {};
    for (int i = 0; i < n; ++i)
#pragma omp simd
        for (int k = 0; k < kBatch; ++k) {
            const float a = std::fabs(xt[i][k]);
            const bool larger = a > amax[k];  // the first of equal magnitudes, as ggml
            amax[k] = larger ? a : amax[k];
            max[k] = larger ? xt[i][k] : max[k];
        }
    const float lo = static_cast<float>(-nmax), hi = static_cast<float>(nmax - 1);
    float iscale[kBatch], sxl[kBatch], sl2[kBatch];
    auto pass = [&] {
        constexpr int kChains = 4;
        float a[kChains][kBatch] = {}, b[kChains][kBatch] = {};
        for (int i0 = 0; i0 < n; i0 += kChains)
            for (int u = 0; u < kChains; ++u)
#pragma omp simd
                for (int k = 0; k < kBatch; ++k) {
                    const float xv = xt[i0 + u][k];
                    const float l = clampTo(roundHalfEven(iscale[k] * xv), lo, hi);
                    const float wl = wt[i0 + u][k] * l;
                    a[u][k] += wl * xv;
                    b[u][k] += wl * l;
                }
#pragma omp simd
        for (int k = 0; k < kBatch; ++k) {
            sxl[k] = (a[0][k] + a[1][k]) + (a[2][k] + a[3][k]);
            sl2[k] = (b[0][k] + b[1][k]) + (b[2][k] + b[3][k]);
        }
    };
    float bestIscale[kBatch], bestSxl[kBatch], bestSl2[kBatch], refined[kBatch];
    for (int k = 0; k < kBatch; ++k) iscale[k] = -static_cast<float>(nmax) / (amax[k] >= 1e-15f ? max[k] : 1.0f);
    pass();
    for (int k = 0; k < kBatch; ++k) {
        bestIscale[k] = iscale[k];
        bestSxl[k] = sl2[k] > 0 ? sxl[k] : 0.0f;
        bestSl2[k] = sl2[k] > 0 ? sl2[k] : 1.0f;
        refined[k] = bestSxl[k] != 0.0f ? bestSl2[k] / bestSxl[k] : bestIscale[k];
    }
    for (int step = -steps; step <= steps + 2; ++step) {
        if (step == 0) continue;
        const float numerator = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step));
        for (int k = 0; k < kBatch; ++k)
            iscale[k] = step <= steps ? numerator / (amax[k] >= 1e-15f ? max[k] : 1.0f) : refined[k];
        pass();
#pragma omp simd
        for (int k = 0; k < kBatch; ++k) {
            // better: sxl^2 / sl2 > bestSxl^2 / bestSl2, both denominators positive
            const bool better = (sl2[k] > 0.0f) & (sxl[k] * sxl[k] * bestSl2[k] > bestSxl[k] * bestSxl[k] * sl2[k]);
            bestIscale[k] = better ? iscale[k] : bestIscale[k];
            bestSxl[k] = better ? sxl[k] : bestSxl[k];
            bestSl2[k] = better ? sl2[k] : bestSl2[k];
            const float scale = sxl[k] / (sl2[k] > 0.0f ? sl2[k] : 1.0f);
            refined[k] = better & (scale != 0.0f) ? 1.0f / (scale != 0.0f ? scale : 1.0f) : refined[k];
        }
    }
    std::int32_t lt[kMaxGroup][kBatch];
    for (int k = 0; k < groups; ++k) {
        const bool flat = amax[k] < 1e-15f;
        scales[k] = flat ? 0.0f : bestSxl[k] / bestSl2[k];
        if (flat) bestIscale[k] = 0.0f;  // every code nmax, i.e. l = 0
    }
    for (int i = 0; i < n; ++i)
#pragma omp simd
        for (int k = 0; k < kBatch; ++k)
            lt[i][k] = static_cast<std::int32_t>(clampTo(roundHalfEven(bestIscale[k] * xt[i][k]), lo, hi)) + nmax;
    for (int k = 0; k < groups; ++k)
        for (int i = 0; i < n; ++i) L[k * n + i] = static_cast<std::uint8_t>(lt[i][k]);
}

// One group: its scale.
inline float fitSymmetric(const float* x, const float* w, int n, int nmax, int steps, std::uint8_t* L) {
    float scale;
    fitSymmetric(x, w, 1, n, nmax, steps, L, &scale);
    return scale;
}

// ggml's make_qp_quants: non-negative values x (the sub-block scales or mins of a K-quant) as
// d * l with l in [0, nmax], d chosen by weighted error over a few grid steps, then refined by
// moving single codes while that lowers the error. Writes l to L; returns d.
inline float fitPositive(const float* x, const float* w, int n, int nmax, std::uint8_t* L) {
    float max = 0.0f;
    for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
    if (max < 1e-15f) {
        std::fill(L, L + n, std::uint8_t{0});
        return 0.0f;
    }
    auto code = [&](float iscale, int i) { return std::min(nmax, nearestInt(iscale * x[i])); };
    auto mse = [&](float iscale) {
        const float scale = 1.0f / iscale;
        float e = 0.0f;
        for (int i = 0; i < n; ++i) {
            const float diff = x[i] - scale * static_cast<float>(code(iscale, i));
            e += w[i] * diff * diff;
        }
        return e;
    };
    float iscale = static_cast<float>(nmax) / max;
    float bestMse = mse(iscale);
    for (int step = -4; step <= 4; ++step) {
        if (step == 0) continue;
        const float candidate = (0.1f * static_cast<float>(step) + static_cast<float>(nmax)) / max;
        const float e = mse(candidate);
        if (e < bestMse) {
            bestMse = e;
            iscale = candidate;
        }
    }
    float sumlx = 0.0f, suml2 = 0.0f;
    int l[64];
    for (int i = 0; i < n; ++i) {
        l[i] = std::max(0, code(iscale, i));
        sumlx += w[i] * x[i] * static_cast<float>(l[i]);
        suml2 += w[i] * static_cast<float>(l[i] * l[i]);
    }
    // Coordinate descent on the codes: the best scale for fixed codes is sumlx / suml2.
    for (int pass = 0; pass < 5; ++pass) {
        bool changed = false;
        for (int i = 0; i < n; ++i) {
            const float slx = sumlx - w[i] * x[i] * static_cast<float>(l[i]);
            const float sl2 = suml2 - w[i] * static_cast<float>(l[i] * l[i]);
            if (!(slx > 0 && sl2 > 0)) continue;
            const int candidate = std::clamp(nearestInt(x[i] * sl2 / slx), 0, nmax);
            if (candidate == l[i]) continue;
            const float nlx = slx + w[i] * x[i] * static_cast<float>(candidate);
            const float nl2 = sl2 + w[i] * static_cast<float>(candidate * candidate);
            if (nlx * nlx * suml2 > sumlx * sumlx * nl2) {
                l[i] = candidate;
                sumlx = nlx;
                suml2 = nl2;
                changed = true;
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = static_cast<std::uint8_t>(l[i]);
    return suml2 > 0 ? sumlx / suml2 : 0.0f;
}

}  // namespace qs::quant::ggml
