#pragma once
// Round-to-nearest onto an integer grid with one (scale, zero) per output row and group of input
// columns, and the grid rules that GPTQ and AWQ share with it.
//
// Codes are unsigned 0 .. 2^bits - 1 and value = scale * (code - zero) for both rules and both
// symmetric and asymmetric grids (a symmetric grid is the unsigned one with a fixed mid zero).
// The two reference tools derive (scale, zero) differently, so the rule is explicit:
//   AutoAwq  (AutoAWQ pseudo_quantize_tensor) asym: scale = max(max - min, 1e-5) / maxq,
//            zero = clamp(-round(min / scale), 0, maxq); sym: scale = max(absmax, 1e-5) / (2^(b-1) - 1),
//            zero = 2^(b-1).
//   AutoGptq (AutoGPTQ Quantizer.find_params) the range is widened to include 0 (an all-zero range
//            becomes [-1, 1]); scale = (xmax - xmin) / maxq; asym: zero = round(-xmin / scale);
//            sym: xmin = -max(|xmin|, xmax), zero = (maxq + 1) / 2.
// Rounding is to nearest, ties to even (torch.round), in f32, so results match the references bit for bit.
#include <cmath>
#include <cstdint>

#include "qs/matrix.h"
#include "qs/quant/quantized_linear.h"

namespace qs::quant {

enum class GridRule { AutoAwq, AutoGptq };

struct GridParams {
    float scale = 1.0f;
    float zero = 0.0f;
};

GridParams gridParams(float minValue, float maxValue, int bits, bool sym, GridRule rule);

// std::nearbyint's result (in the default rounding mode, half to even) in plain arithmetic that GCC
// vectorises on any x86-64: without SSE4.1's roundps, nearbyintf is a call per weight. Adding and
// subtracting 2^23 leaves the nearest integer of any |x| < 2^23; from 2^23 on every float is an integer
// already (shifted by 0), and a NaN passes through. copysign keeps nearbyint's -0 for small negative x.
// The choice is of the shift, not of the result, so no arithmetic is conditional and the loops around
// it stay branch-free.
inline float nearestInteger(float x) {
    constexpr float kShift = 8388608.0f;  // 2^23
    const float magnitude = std::fabs(x);
    const float shift = magnitude < kShift ? kShift : 0.0f;
    return std::copysign((magnitude + shift) - shift, x);
}

// The clamp to [0, maxq] is written as comparisons rather than std::fmax/std::fmin, with glibc's
// results in every case (a NaN becomes 0, -0 stays -0), because without -ffast-math GCC calls
// fmaxf/fminf through the PLT for each weight, which kept GPTQ's and RTN's loops scalar.
inline float quantizeCode(float w, GridParams p, float maxq) {
    const float q = nearestInteger(w / p.scale) + p.zero;
    const float low = q >= 0.0f ? q : 0.0f;
    return low <= maxq ? low : maxq;
}
inline float dequantizeCode(float code, GridParams p) { return (code - p.zero) * p.scale; }

struct RtnOptions {
    int bits = 4;         // 2 .. 8
    int groupSize = 128;  // 32, 64, 128, ... or -1 for one group per row; a last partial group is allowed
    bool sym = false;
    GridRule rule = GridRule::AutoAwq;
    // AutoAWQ's auto_clip: per row and group, shrink the range to max|w| * (1 - i / clipGrid) for
    // i < clipMaxShrink * clipGrid, keeping the one with the least output error on the calibration
    // inputs. Needs the Hessian.
    bool clipSearch = false;
    int clipGrid = 20;
    double clipMaxShrink = 0.5;
};

// Quantizes w [out, in]. With h (H = 2 XᵀX / n of calibration inputs) the clip search can run and
// the result carries outputError and outputMse.
QuantizedLinear quantizeRtn(const MatrixF& w, const RtnOptions& options = {}, const MatrixF* h = nullptr);

// The rows' (scale, zero) of columns [c0, c0 + count) of w, optionally with every |w| clamped to
// clip[r] first (AutoAWQ's apply_clip). Writes codes (row-major, cols of w) and column g of scales/zeros.
void quantizeGroupRtn(const Eigen::Ref<const MatrixF>& w, std::int64_t c0, std::int64_t count, int bits, bool sym,
                      GridRule rule, const float* clip, std::uint8_t* codes, MatrixF& scales, MatrixF& zeros,
                      std::int64_t group);

void checkIntOptions(int bits, int groupSize, std::int64_t cols);  // throws qs::Error on a bad setting
int groupCount(int groupSize, std::int64_t cols);                  // ceil(cols / groupSize); 1 for -1

}  // namespace qs::quant
