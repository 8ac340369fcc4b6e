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

// Throws qs::Error "<where>: linear '<name>' decodes to N non-finite weights (NaN or Inf) of M ..."
// when `nonFinite` > 0, unless `allow`.
inline void requireFiniteCount(std::int64_t nonFinite, std::int64_t total, const std::string& where,
                               const std::string& linear, bool allow) {
    if (allow || nonFinite == 0) return;
    throw Error(where + ": linear '" + linear + "' decodes to " + std::to_string(nonFinite) +
                " non-finite weights (NaN or Inf) of " + std::to_string(total) +
                "; --allow-nonfinite uses them anyway");
}

inline void requireFiniteWeights(const MatrixF& weights, const std::string& where, const std::string& linear,
                                 bool allow) {
    if (!allow) requireFiniteCount(countNonFinite(weights), weights.size(), where, linear, allow);
}

}  // namespace qs
