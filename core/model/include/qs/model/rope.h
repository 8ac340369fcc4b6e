#pragma once
// Rotary position embedding in Hugging Face's "rotate_half" layout: within each head, element i is
// paired with element i + rotaryDim/2 (not with its neighbour, as Meta's original layout does; HF
// exports permute the q/k projection rows so that both layouts give the same attention scores).
// A partial rotary embedding (Phi-4-mini) rotates the first rotaryDim elements of each head and passes
// the rest through; LongRoPE (Phi-3.5 / Phi-4) divides each frequency by its short or long factor and
// scales cos and sin by its attention factor.
#include <vector>

#include "qs/matrix.h"
#include "qs/model/model_config.h"

namespace qs::model {

// transformers' get_mscale / yarn_get_mscale(scale, mscale): 0.1 · mscale · ln(scale) + 1, or 1 for scale <= 1.
double yarnMscale(double scale, double mscale);

class RotaryEmbedding {
public:
    // The global RoPE of `config`: rope_theta with its rope_scaling, over config.rotaryDims() (DeepSeek's
    // latent attention: heads of qk_rope_head_dim, its rotary parts).
    explicit RotaryEmbedding(const ModelConfig& config);
    // base `theta`, scaled as `scaling` says (Gemma's sliding layers: rope_local_base_freq, unscaled);
    // rotaryDim 0: the whole head.
    RotaryEmbedding(int headDim, double theta, const RopeScaling& scaling, int rotaryDim = 0);

    // Rotates every head of x [T, numHeads * headDim] in place; row t sits at position firstPosition + t.
    // LongRoPE takes the long factors when the call reaches beyond the original context (as transformers'
    // longrope_frequency_update does per forward call: max position + 1 > original_max_position_embeddings).
    void apply(MatrixF& x, int numHeads, int firstPosition) const;

    // inv_freq of HF's rotary embedding after linear, llama3, yarn or longrope scaling, rotaryDim/2
    // values, for a call whose last position is positionsEnd - 1 (only LongRoPE depends on it).
    const std::vector<double>& inverseFrequencies(int positionsEnd = 0) const;
    // What cos and sin are multiplied by (HF's attention_scaling): YaRN's or LongRoPE's attention factor, else 1.
    double attentionFactor() const { return attentionFactor_; }

private:
    int headDim_;
    int rotaryDim_;
    std::vector<double> invFreq_;
    std::vector<double> longInvFreq_;  // LongRoPE beyond longFrom_ positions; empty otherwise
    int longFrom_ = 0;
    double attentionFactor_ = 1.0;
};

}  // namespace qs::model
