#pragma once
// RotatedWeights: a WeightSource decorator that hands out another source's weights with a WeightRotation
// folded in, one layer at a time as they are asked for (nothing is kept beyond the rotation's signs). Its
// model computes the logits of the original; its linears are the ones --rotate quantizes.
#include <memory>

#include "qs/model/weight_rotation.h"
#include "qs/model/weight_source.h"

namespace qs::model {

class RotatedWeights final : public WeightSource {
public:
    RotatedWeights(std::shared_ptr<const WeightSource> original, WeightRotation rotation);

    LayerWeights layer(int index) const override;
    MatrixF embeddingRows(std::span<const TokenId> tokens) const override;
    VectorF finalNorm() const override;
    // The original lm_head (or tied embedding) on x Qᵀ diag(g): no rotated copy of lm_head is made.
    MatrixF lmHead(const MatrixF& normedHidden, const LayerMath& math) const override;

    const WeightRotation& rotation() const { return rotation_; }
    const WeightSource& original() const { return *original_; }

private:
    std::shared_ptr<const WeightSource> original_;
    WeightRotation rotation_;
};

}  // namespace qs::model
