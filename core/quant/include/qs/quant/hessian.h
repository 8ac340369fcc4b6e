#pragma once
// The GPTQ Hessian H = 2 XᵀX / n of a linear layer's inputs X [n, features], accumulated chunk by
// chunk so that calibration can stream tokens through it layer by layer without keeping X.
// Each chunk is one f32 GEMM per 256x256 tile of the lower triangle (spread over the OpenMP threads),
// added into that tile's f64 running sum at once, so no [features, features] f32 buffer is needed;
// the f64 sums hold only the lower triangle's tiles (half of features² doubles), and millions of
// tokens do not lose the small entries. The result equals gramLower's chunk sums bit for bit.
// The accumulator also keeps mean|x| per channel (what AWQ and the outlier view need).
// With GramInputs::Bf16 each tile's product reads the chunk rounded to bfloat16 and accumulates in f32
// (bf16_gram.h, the calibration's --matmul bf16): the same f64 sums and the same f32 H from them.
#include <cstdint>
#include <utility>
#include <vector>

#include "qs/matrix.h"

namespace qs::quant {

// What the products XᵀX multiply: the inputs as they are (f32), or rounded to bfloat16.
enum class GramInputs { F32, Bf16 };

class HessianAccumulator {
public:
    explicit HessianAccumulator(std::int64_t features, GramInputs inputs = GramInputs::F32);

    // Adds the rows of `x` [tokens, features]. Large inputs are split in chunks of `chunkRows`.
    void add(const Eigen::Ref<const MatrixF>& x, std::int64_t chunkRows = 2048);

    std::int64_t samples() const { return samples_; }  // rows added so far
    MatrixF finalize() const;                          // 2 XᵀX / n, full symmetric [features, features]
    // finalize(), then frees the running sums: what is left is the sample count and meanAbs();
    // add() and finalize() throw afterwards. For a caller that needs H only once (the Job).
    MatrixF release();
    void discard();  // frees the sums without computing H (as release())
    bool released() const { return released_; }
    VectorF meanAbs() const;      // mean |x| per input channel
    std::uint64_t bytes() const;  // memory held by the running sums

private:
    void addChunk(const Eigen::Ref<const MatrixF>& x);
    void addBf16Chunk(const Eigen::Ref<const MatrixF>& x);
    void checkNotReleased(const char* what) const;

    std::int64_t features_;
    GramInputs inputs_;
    std::int64_t samples_ = 0;
    bool released_ = false;
    // Σ xᵀx, the lower triangle's tiles (row tile i >= column tile j), each column-major, one after
    // another in tiles_ order; tile p starts at offsets_[p].
    std::vector<std::pair<std::int64_t, std::int64_t>> tiles_;
    std::vector<std::size_t> offsets_;
    std::vector<double> sum_;
    VectorD absSum_;  // Σ |x| per channel
};

// XᵀX of one chunk in f32, lower triangle only (the upper is left unspecified): the blocked,
// threaded SYRK that HessianAccumulator uses. Column-major result [features, features].
Eigen::MatrixXf gramLower(const Eigen::Ref<const MatrixF>& x);

// One-shot convenience: H = 2 XᵀX / n.
MatrixF hessian(const Eigen::Ref<const MatrixF>& x);

}  // namespace qs::quant
