#pragma once
// GPTAQ's second statistic (qs/quant/gptaq.h): D = 2 (X - X̃)ᵀ X̃ / n, from the full-precision model's
// inputs X and the quantized model's X̃ to one linear over the same tokens, accumulated chunk by chunk
// as HessianAccumulator accumulates H = 2 X̃ᵀX̃ / n: one single-threaded f32 GEMM per 256x256 tile over
// the OpenMP threads, added into that tile's f64 running sum, so the bits do not depend on the team.
// D is not symmetric: the sums hold all of it (features² doubles).
#include <cstdint>

#include "qs/matrix.h"

namespace qs::quant {

class InputDeviationAccumulator {
public:
    explicit InputDeviationAccumulator(std::int64_t features);

    // x: the full-precision model's inputs, xq: the quantized model's, both [tokens, features], the
    // same tokens in the same order.
    void add(const Eigen::Ref<const MatrixF>& x, const Eigen::Ref<const MatrixF>& xq);
    std::int64_t samples() const { return samples_; }
    MatrixF finalize() const;  // 2 (X - X̃)ᵀ X̃ / n, [features, features]
    std::uint64_t bytes() const { return static_cast<std::uint64_t>(sum_.size()) * sizeof(double); }

private:
    std::int64_t features_;
    std::int64_t samples_ = 0;
    MatrixD sum_;  // Σ (x - x̃)ᵀ x̃
};

}  // namespace qs::quant
