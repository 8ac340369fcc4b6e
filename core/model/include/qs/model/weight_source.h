#pragma once
// WeightSource: where the transformer gets its weights, one decoder layer at a time, so that a model
// larger than memory in f32 can still be run layer by layer. CheckpointWeights reads a checkpoint;
// ModelWeights holds every weight in memory (small or synthetic models, tests).
#include <cstdint>
#include <span>
#include <vector>

#include "qs/matrix.h"
#include "qs/model/layer_math.h"
#include "qs/model/layer_weights.h"

namespace qs::model {

using TokenId = std::int32_t;  // the same alias as in qs/model/tokenizer.h

class WeightSource {
public:
    virtual ~WeightSource() = default;

    // Decoder layer `index`, converted to f32 (a fresh copy the caller owns).
    virtual LayerWeights layer(int index) const = 0;
    // The embedding rows of `tokens`: [tokens.size(), hidden]. Throws qs::Error for an id out of range.
    virtual MatrixF embeddingRows(std::span<const TokenId> tokens) const = 0;
    virtual VectorF finalNorm() const = 0;
    // logits [T, vocab] = normedHidden [T, hidden] · lm_headᵀ (the embedding when tied), the products on
    // `math`. The source does the product so that it can stream a large lm_head instead of caching it in f32.
    virtual MatrixF lmHead(const MatrixF& normedHidden, const LayerMath& math) const = 0;
};

// Every weight in memory. With tied embeddings leave lmHeadWeight empty: the embedding is used.
struct ModelWeights final : WeightSource {
    MatrixF embedding;  // [vocab, hidden]
    std::vector<LayerWeights> layers;
    VectorF norm;          // [hidden]
    MatrixF lmHeadWeight;  // [vocab, hidden], empty when tied

    LayerWeights layer(int index) const override;
    MatrixF embeddingRows(std::span<const TokenId> tokens) const override;
    VectorF finalNorm() const override { return norm; }
    MatrixF lmHead(const MatrixF& normedHidden, const LayerMath& math) const override;
};

}  // namespace qs::model
