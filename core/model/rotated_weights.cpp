#include "qs/model/rotated_weights.h"

namespace qs::model {

RotatedWeights::RotatedWeights(std::shared_ptr<const WeightSource> original, WeightRotation rotation)
    : original_(std::move(original)), rotation_(std::move(rotation)) {}

LayerWeights RotatedWeights::layer(int index) const {
    LayerWeights w = original_->layer(index);
    rotation_.rotateLayer(w);
    return w;
}

MatrixF RotatedWeights::embeddingRows(std::span<const TokenId> tokens) const {
    MatrixF rows = original_->embeddingRows(tokens);
    rotation_.rotateEmbeddingRows(rows);
    return rows;
}

VectorF RotatedWeights::finalNorm() const { return rotation_.foldedNorm(original_->finalNorm()); }

MatrixF RotatedWeights::lmHead(const MatrixF& normedHidden, const LayerMath& math) const {
    return original_->lmHead(rotation_.lmHeadInput(normedHidden, original_->finalNorm()), math);
}

}  // namespace qs::model
