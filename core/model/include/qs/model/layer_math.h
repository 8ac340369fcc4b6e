#pragma once
// LayerMath: the heavy arithmetic of a decoder layer (each linear's GEMM and causal attention) behind
// one interface, so that calibration and evaluation run it where the job's backend runs: the CPU
// (cpuLayerMath(), Eigen on the OpenMP threads, the reference) or a CUDA device (gpu/, parity-tested
// against this one). Norms, RoPE and the SiLU product stay on the host: they are O(T · width).
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "qs/eigen.h"
#include "qs/matrix.h"
#include "qs/model/attention.h"
#include "qs/model/layer_weights.h"

namespace qs::model {

class LayerMath {
public:
    virtual ~LayerMath() = default;

    virtual std::string_view name() const = 0;  // "CPU", "CUDA"
    // y = x Wᵀ + b for x [T, in]: what Linear::operator() computes.
    virtual MatrixF linear(const MatrixF& x, const Linear& linear) const = 0;
    // x Wᵀ for a weight that is no Linear of a layer (a block of lm_head).
    virtual MatrixF product(const MatrixF& x, const MatrixF& w) const;
    // linear(x, l) for several linears reading the same x (q, k, v): a device uploads x once.
    virtual std::vector<MatrixF> linears(const MatrixF& x, std::span<const Linear* const> linears) const;
    // SiLU(x Gᵀ + b) ⊙ (x Uᵀ + b), the MLP's down_proj input, SiLU(g) = g / (1 + e^-g) as torch computes
    // it: a device returns one matrix instead of two and spares the host the exponentials.
    virtual MatrixF gatedProduct(const MatrixF& x, const Linear& gate, const Linear& up) const;
    // causalAttention(q, k, v, shape).
    virtual MatrixF attention(const Eigen::Ref<const MatrixF>& q, const Eigen::Ref<const MatrixF>& k,
                              const Eigen::Ref<const MatrixF>& v, const AttentionShape& shape) const = 0;
    // While the returned handle lives, the caller promises that `weights` neither change nor move,
    // so a device may keep its copies of them instead of uploading each linear for every sequence.
    // The CPU keeps nothing (an empty handle).
    virtual std::shared_ptr<void> keepResident(const LayerWeights& weights) const;
};

// The reference: Linear::operator() and causalAttention().
const LayerMath& cpuLayerMath();

}  // namespace qs::model
