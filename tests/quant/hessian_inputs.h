#pragma once
// Inputs for the Hessian tests: correlated channels (one shared component per row), every seventh of
// them offset by 3, with mantissas that bfloat16 cannot hold.
#include <cstdint>
#include <random>

#include "qs/matrix.h"

namespace qs::quant::testing {

inline MatrixF correlatedInputs(std::int64_t n, std::int64_t f, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    MatrixF x(n, f);
    for (std::int64_t t = 0; t < n; ++t) {
        const float shared = g(gen);
        for (std::int64_t j = 0; j < f; ++j) x(t, j) = shared + 0.5f * g(gen) + (j % 7 == 0 ? 3.0f : 0.0f);
    }
    return x;
}

}  // namespace qs::quant::testing
