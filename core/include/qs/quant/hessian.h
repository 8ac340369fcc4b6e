#pragma once
// The GPTQ Hessian H = 2 XᵀX / n of a linear layer's inputs X [n, features], accumulated chunk by
// chunk so that calibration can stream tokens through it layer by layer without keeping X.
// Each chunk is one f32 GEMM (only the lower triangle's blocks, spread over the OpenMP threads);
// chunks are summed in f64 so that millions of tokens do not lose the small entries.
// The accumulator also keeps mean|x| per channel (what AWQ and the outlier view need).
#include <cstdint>

#include "qs/matrix.h"

namespace qs::quant {

class HessianAccumulator {
public:
    explicit HessianAccumulator(std::int64_t features);

    // Adds the rows of `x` [tokens, features]. Large inputs are split in chunks of `chunkRows`.
    void add(const Eigen::Ref<const MatrixF>& x, std::int64_t chunkRows = 2048);

    std::int64_t features() const { return features_; }
    std::int64_t samples() const { return samples_; }   // rows added so far
    MatrixF finalize() const;                            // 2 XᵀX / n, full symmetric [features, features]
    VectorF meanAbs() const;                             // mean |x| per input channel

private:
    void addChunk(const Eigen::Ref<const MatrixF>& x);

    std::int64_t features_;
    std::int64_t samples_ = 0;
    Eigen::MatrixXd sum_;   // lower triangle of Σ xᵀx (column-major, like gramLower's tiles)
    VectorD absSum_;        // Σ |x| per channel
};

// XᵀX of one chunk in f32, lower triangle only (the upper is left unspecified): the blocked,
// threaded SYRK that HessianAccumulator uses. Column-major result [features, features].
Eigen::MatrixXf gramLower(const Eigen::Ref<const MatrixF>& x);

// One-shot convenience: H = 2 XᵀX / n.
MatrixF hessian(const Eigen::Ref<const MatrixF>& x);

}  // namespace qs::quant
