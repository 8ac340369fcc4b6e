#pragma once
// WeightRotation: the Hadamard rotations of QuaRot / SpinQuant folded into a model's weights, so that the
// rotated model is an ordinary checkpoint of the same architecture that computes the same logits, while its
// linears' input channels have their outliers spread (which lowers the error of quantizing them).
//
// With Q the residual stream's rotation (a seeded quant::RandomHadamard of size hidden; h' = h Q):
//   * every RMSNorm's weight g that a linear reads is folded into that linear, W diag(g), and the norm becomes
//     the identity (RMSNorm commutes with an orthogonal Q; Gemma's 1 + w folds as its 1 + w);
//   * the embedding's rows E Q; every residual reader's input columns W Q (q/k/v, gate/up, the router, each
//     expert's gate/up, lm_head with the final norm folded: L diag(g) Q, untied from the embedding);
//   * every residual writer's output rows Qᵀ W and bias Qᵀ b (o_proj, down_proj, each expert's down);
//   * per head, v_proj's rows Qhᵀ W_v and o_proj's columns W_o Qh with Qh one rotation of head_dim that every
//     head shares (GQA included): the attention mixes values per head linearly, so Qh passes through it.
// q/k norms act on q/k's outputs, which are not rotated: they stay where they are.
#include <cstdint>
#include <string>

#include "qs/matrix.h"
#include "qs/model/layer_weights.h"
#include "qs/model/model_config.h"
#include "qs/quant/hadamard.h"

namespace qs::model {

// Why `config`'s model cannot fold a rotation into its weights (one line naming what), or empty.
std::string rotationRefusal(const ModelConfig& config);

struct WeightRotationOptions {
    // Off only for a negative control: rotate the linears but leave the norms' weights where they are (wrong
    // whenever a norm is not the identity).
    bool foldNorms = true;
};

class WeightRotation {
public:
    using Options = WeightRotationOptions;

    // Throws qs::Error with rotationRefusal(config) when the model cannot fold it.
    WeightRotation(ModelConfig config, std::uint64_t seed, Options options = {});

    std::uint64_t seed() const { return seed_; }
    const quant::RandomHadamard& residual() const { return residual_; }
    const quant::RandomHadamard& head() const { return head_; }

    // One decoder layer's weights, rotated and with its pre-norms folded (in place).
    void rotateLayer(LayerWeights& w) const;
    // Embedding rows [T, hidden] -> E Q.
    void rotateEmbeddingRows(MatrixF& rows) const;
    // What the rotated model's final norm is: the identity of the family's norm (1 - normOffset).
    VectorF foldedNorm(const VectorF& norm) const;
    // lm_head [vocab, hidden] with the final norm g folded: L diag(g) Q.
    void rotateLmHead(MatrixF& lmHead, const VectorF& finalNorm) const;
    // What the original lm_head must read so that original(x') equals the rotated one on the rotated model's
    // normed hidden state x': x' Qᵀ diag(g).
    MatrixF lmHeadInput(const MatrixF& normedHidden, const VectorF& finalNorm) const;

    // The parts rotateLayer is made of, for an export that writes the tensors left dense one at a time:
    // a reader of the residual stream behind `norm` (W diag(offset + g) Q; a router), a writer's bias (Qᵀ b),
    // v_proj's bias per head (Qhᵀ b_h).
    void rotateReader(Linear& reader, const VectorF& norm) const;
    void rotateWriterBias(VectorF& bias) const;
    void rotateValueBias(VectorF& bias) const;

private:
    void foldNormInto(Linear& reader, const VectorF& norm) const;
    void rotateWriter(Linear& writer) const;
    VectorF scale(const VectorF& norm) const;  // offset + g

    ModelConfig config_;
    std::uint64_t seed_;
    Options options_;
    quant::RandomHadamard residual_;
    quant::RandomHadamard head_;
};

}  // namespace qs::model
