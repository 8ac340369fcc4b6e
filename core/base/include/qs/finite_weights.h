#pragma once
// Decoded weights that are NaN or +-Inf (a NaN scale, an E4M3 NaN code, E8M0 0xFF, an infinite
// NVFP4 divisor, 3e38 scales times a code) spoil every product they enter: a KL or a dequantized
// checkpoint computed from them is a number without meaning. Whatever decodes or reads a linear to
// run, export or quantize it refuses such a linear through requireFiniteWeights, unless the user
// asked for them (--allow-nonfinite).
#include <cmath>
#include <cstdint>
#include <string>

#include "qs/error.h"
#include "qs/matrix.h"

namespace qs {

inline std::int64_t countNonFinite(const MatrixF& m) {
    std::int64_t n = 0;
    const float* p = m.data();
    for (Eigen::Index i = 0; i < m.size(); ++i) n += std::isfinite(p[i]) ? 0 : 1;
    return n;
}

// Throws qs::Error "<where>: linear '<name>' has N non-finite weights (NaN or Inf) of M ..." unless
// every weight is finite or `allow`.
inline void requireFiniteWeights(const MatrixF& weights, const std::string& where, const std::string& linear, bool allow) {
    if (allow) return;
    const std::int64_t bad = countNonFinite(weights);
    if (bad == 0) return;
    throw Error(where + ": linear '" + linear + "' decodes to " + std::to_string(bad) + " non-finite weights (NaN or Inf) of " +
                std::to_string(weights.size()) + "; --allow-nonfinite uses them anyway");
}

}  // namespace qs
