#pragma once
// Rotary position embedding in Hugging Face's "rotate_half" layout: within each head, element i is
// paired with element i + headDim/2 (not with its neighbour, as Meta's original layout does; HF
// exports permute the q/k projection rows so that both layouts give the same attention scores).
#include <vector>

#include "qs/matrix.h"
#include "qs/model/model_config.h"

namespace qs::model {

class RotaryEmbedding {
public:
    // The global RoPE of `config`: rope_theta with its rope_scaling.
    explicit RotaryEmbedding(const ModelConfig& config);
    // base `theta`, scaled as `scaling` says (Gemma's sliding layers: rope_local_base_freq, unscaled).
    RotaryEmbedding(int headDim, double theta, const RopeScaling& scaling);

    // Rotates every head of x [T, numHeads * headDim] in place; row t sits at position firstPosition + t.
    void apply(MatrixF& x, int numHeads, int firstPosition) const;

    // inv_freq of HF's rotary embedding, after linear, llama3 or yarn scaling: headDim/2 values.
    const std::vector<double>& inverseFrequencies() const { return invFreq_; }
    // What cos and sin are multiplied by (HF's attention_scaling): YaRN's attention factor, else 1.
    double attentionScaling() const { return attentionScaling_; }

private:
    int headDim_;
    std::vector<double> invFreq_;
    double attentionScaling_ = 1.0;
};

}  // namespace qs::model
