#pragma once
// Synthetic layers for the quant benchmarks: N(0, 0.02²) weights and correlated inputs (a few shared
// components plus independent noise, a handful of salient channels), fixed seeds.
#include <cstdint>
#include <random>

#include "qs/matrix.h"

namespace qs::bench {

inline MatrixF benchWeights(std::int64_t rows, std::int64_t cols, unsigned seed = 1) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> g(0.0f, 0.02f);
    MatrixF w(rows, cols);
    for (std::int64_t i = 0; i < w.size(); ++i) w.data()[i] = g(gen);
    return w;
}

inline MatrixF benchInputs(std::int64_t tokens, std::int64_t features, unsigned seed = 2) {
    constexpr int kShared = 8;
    std::mt19937 gen(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    MatrixF mix(kShared, features);
    for (std::int64_t i = 0; i < mix.size(); ++i) mix.data()[i] = g(gen);
    MatrixF z(tokens, kShared);
    for (std::int64_t i = 0; i < z.size(); ++i) z.data()[i] = g(gen);
    MatrixF x = z * mix;
    for (std::int64_t i = 0; i < x.size(); ++i) x.data()[i] += 0.5f * g(gen);
    for (std::int64_t c = 0; c < features; c += 509) x.col(c) *= 8.0f;  // salient channels
    return x;
}

}  // namespace qs::bench
