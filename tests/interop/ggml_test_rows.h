#pragma once
// Test-only: rows of weights in the shapes that stress a block quantizer (normal, heavy-tailed,
// all-zero, tiny, huge, a single outlier, NaN-free extremes), and activations-like importance weights.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace qs::interop {

enum class RowKind { Normal, HeavyTailed, AllZero, Tiny, Huge, SingleOutlier, Extremes };

inline const std::vector<RowKind>& allRowKinds() {
    static const std::vector<RowKind> kinds = {RowKind::Normal, RowKind::HeavyTailed,   RowKind::AllZero, RowKind::Tiny,
                                               RowKind::Huge,   RowKind::SingleOutlier, RowKind::Extremes};
    return kinds;
}

inline std::string rowKindName(RowKind k) {
    switch (k) {
        case RowKind::Normal: return "normal";
        case RowKind::HeavyTailed: return "heavy-tailed";
        case RowKind::AllZero: return "all-zero";
        case RowKind::Tiny: return "tiny";
        case RowKind::Huge: return "huge";
        case RowKind::SingleOutlier: return "single-outlier";
        case RowKind::Extremes: return "extremes";
    }
    return "?";
}

inline std::vector<float> makeRow(RowKind kind, std::int64_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::student_t_distribution<float> student(2.0f);
    std::vector<float> x(static_cast<std::size_t>(n));
    switch (kind) {
        case RowKind::Normal:
            for (float& v : x) v = 0.02f * normal(rng);
            break;
        case RowKind::HeavyTailed:
            for (float& v : x) v = 0.02f * student(rng);
            break;
        case RowKind::AllZero: break;
        case RowKind::Tiny:  // scales fall into F16's subnormal range
            for (float& v : x) v = 3e-7f * normal(rng);
            break;
        case RowKind::Huge:  // scales near the top of F16's range
            for (float& v : x) v = 2e3f * normal(rng);
            break;
        case RowKind::SingleOutlier: {
            for (float& v : x) v = 0.02f * normal(rng);
            x[std::uniform_int_distribution<std::size_t>(0, x.size() - 1)(rng)] = 3.0f;
            break;
        }
        case RowKind::Extremes: {  // every element one of -A, -a, 0, a, A
            const float levels[5] = {-1000.0f, -1e-3f, 0.0f, 1e-3f, 1000.0f};
            std::uniform_int_distribution<int> pick(0, 4);
            for (float& v : x) v = levels[pick(rng)];
            break;
        }
    }
    return x;
}

// Importance as llama.cpp's imatrix holds it: the mean of x^2 over calibration activations per input
// column, with a few "hot" channels far above the rest.
inline std::vector<float> makeImportance(std::int64_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> w(static_cast<std::size_t>(n), 0.0f);
    constexpr int kSamples = 16;
    for (int s = 0; s < kSamples; ++s)
        for (float& v : w) {
            const float a = normal(rng);
            v += a * a / kSamples;
        }
    std::uniform_int_distribution<std::size_t> channel(0, w.size() - 1);
    for (int h = 0; h < 8; ++h) w[channel(rng)] *= 100.0f;
    return w;
}

}  // namespace qs::interop
