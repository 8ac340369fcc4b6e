#pragma once
// Weights for the encoder tests: seeded Gaussian matrices at the scale of LLM linears.
#include <cstdint>
#include <random>

#include "qs/matrix.h"

namespace qs::formats::test {

inline MatrixF gaussianWeight(std::int64_t rows, std::int64_t cols, unsigned seed, float sigma = 0.02f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, sigma);
    MatrixF w(rows, cols);
    for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = normal(rng);
    return w;
}

// Largest magnitude 2.625 = 2688 * 2^-10: NVFP4's global scale amax / (448 * 6) is then a power of
// two, and multiplying or dividing by it is exact whatever the order of the operations.
inline MatrixF powerOfTwoGlobalWeight(std::int64_t rows, std::int64_t cols, unsigned seed) {
    MatrixF w = (gaussianWeight(rows, cols, seed) * 50.0f).cwiseMax(-2.5f).cwiseMin(2.5f);
    w(0, 3) = 2.625f;
    return w;
}

}  // namespace qs::formats::test
