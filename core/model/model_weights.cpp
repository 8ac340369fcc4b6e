#include <string>

#include "qs/error.h"
#include "qs/model/weight_source.h"

namespace qs::model {

LayerWeights ModelWeights::layer(int index) const {
    if (index < 0 || static_cast<std::size_t>(index) >= layers.size())
        throw Error("model weights: no decoder layer " + std::to_string(index));
    return layers[static_cast<std::size_t>(index)];
}

MatrixF ModelWeights::embeddingRows(std::span<const TokenId> tokens) const {
    MatrixF rows(static_cast<Eigen::Index>(tokens.size()), embedding.cols());
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        if (tokens[t] < 0 || tokens[t] >= embedding.rows())
            throw Error("model weights: token id " + std::to_string(tokens[t]) + " is outside the vocabulary of " +
                        std::to_string(embedding.rows()));
        rows.row(static_cast<Eigen::Index>(t)) = embedding.row(tokens[t]);
    }
    return rows;
}

MatrixF ModelWeights::lmHead(const MatrixF& normedHidden, const LayerMath& math) const {
    const MatrixF& w = lmHeadWeight.size() > 0 ? lmHeadWeight : embedding;
    if (normedHidden.cols() != w.cols())
        throw Error("model weights: lm_head expects " + std::to_string(w.cols()) + " features");
    return math.product(normedHidden, w);
}

}  // namespace qs::model
