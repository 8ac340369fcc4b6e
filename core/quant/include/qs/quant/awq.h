#pragma once
// AWQ (Lin et al., 2023) as AutoAWQ and the reference search_scale do it: for the linears that read one
// input X (q/k/v after input_layernorm, gate/up after post_attention_layernorm, o after v, down after
// up), search α over the grid 0, 1/grid, ..., (grid-1)/grid with per-input-channel scales
//   s = max(mean|x|, 1e-4)^α,  s /= sqrt(max(s) * min(s)),
// quantize each W·diag(s) with round-to-nearest, and keep the α whose (Q(W·s)/s)·X is closest to
// W·X: the sum over the linears of the mean squared output error. α = 0 is plain RTN (s = 1 exactly),
// so the search can only help. The previous op absorbs 1/s (foldIntoNorm / foldIntoPreviousLinear).
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "qs/matrix.h"
#include "qs/quant/quantized_linear.h"
#include "qs/quant/rtn.h"

namespace qs::quant {

struct AwqOptions {
    int bits = 4;
    int groupSize = 128;
    bool sym = false;  // AutoAWQ's zero_point = true
    GridRule rule = GridRule::AutoAwq;
    int grid = 20;            // α = i / grid, i = 0 .. grid - 1
    bool clipSearch = false;  // AutoAWQ's auto_clip on the scaled weights, inputs X / s
};

struct AwqResult {
    double alpha = 0.0;
    std::vector<float> scales;             // s per input channel
    std::vector<QuantizedLinear> linears;  // per weight: codes of W·diag(s), inputScales = s, outputMse/Error measured
    std::vector<double> gridError;         // the search objective at each α (Σ over linears of the output mse)
    double seconds = 0.0;
};

// weights: the linears reading x [tokens, in]; each [out_i, in].
AwqResult quantizeAwq(const std::vector<const MatrixF*>& weights, const Eigen::Ref<const MatrixF>& x,
                      const AwqOptions& options = {});

// The same search from calibration statistics alone: mean|x| per channel and H = 2 XᵀX / n
// (what HessianAccumulator keeps), so layer-by-layer calibration need not keep X.
AwqResult quantizeAwqFromStats(const std::vector<const MatrixF*>& weights, const VectorF& meanAbs, const MatrixF& h,
                               const AwqOptions& options = {});

// hessianQuadratic(d, H) = Σ over the rows of ½ d H dᵀ, computed elsewhere (a device holding H).
using QuadraticForm = std::function<double(const MatrixF& d)>;

// The end of quantizeAwqFromStats for a grid searched elsewhere (a device backend): gridError[i] is
// the objective at α = i / grid. Picks α as the search does and quantizes every weight with the CPU
// code, so only the grid's errors can differ from the CPU search. The output errors are measured
// with `quadratic` when given (else on the CPU: rows x cols² per weight, twice).
AwqResult awqFromGridErrors(const std::vector<const MatrixF*>& weights, const VectorF& meanAbs, const MatrixF& h,
                            std::vector<double> gridError, const AwqOptions& options = {},
                            const QuadraticForm& quadratic = {});

// s for one α from mean|x| (the reference formula, docs/reference-algorithms.md, in f32).
std::vector<float> awqScales(const VectorF& meanAbs, double alpha);

// Moves 1/s into what produced X: an RMSNorm's weight (w_c /= s_c) or the rows of the previous
// linear (row c /= s_c, for o_proj after v_proj and down_proj after up_proj).
void foldIntoNorm(std::span<float> normWeight, std::span<const float> s);
void foldIntoPreviousLinear(MatrixF& previous, std::span<const float> s);

}  // namespace qs::quant
