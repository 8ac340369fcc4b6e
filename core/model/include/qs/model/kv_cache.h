#pragma once
// KvCache: the rotated keys and the values of every decoder layer for the positions already run, so
// that generation runs each new token through the model once instead of recomputing the prefix.
#include <vector>

#include "qs/matrix.h"
#include "qs/model/gated_delta_net.h"
#include "qs/model/model_config.h"

namespace qs::model {

class KvCache {
public:
    // Room for `capacity` positions (at most max_position_embeddings) in every layer.
    KvCache(const ModelConfig& config, int capacity);

    int capacity() const { return capacity_; }
    // Positions stored in layer 0, i.e. the position of the next token to run.
    int length() const { return layers_.empty() ? 0 : layers_.front().length; }

    // Appends k, v [T, kvDim] to `layer`; throws qs::Error past the capacity.
    void append(int layer, const MatrixF& k, const MatrixF& v);
    // All keys / values of `layer` so far: [length(layer), kvDim].
    Eigen::Ref<const MatrixF> keys(int layer) const;
    Eigen::Ref<const MatrixF> values(int layer) const;
    // A linear-attention layer (Qwen3.5's Gated DeltaNet) keeps a recurrent state instead of keys and values;
    // advance counts the positions it has run (throws qs::Error past the capacity).
    DeltaNetState& deltaNetState(int layer);
    void advance(int layer, int positions);

private:
    struct Layer {
        MatrixF k, v;
        int length = 0;
        DeltaNetState deltaNet;
    };
    const Layer& at(int layer) const;

    int capacity_;
    std::vector<Layer> layers_;
};

}  // namespace qs::model
