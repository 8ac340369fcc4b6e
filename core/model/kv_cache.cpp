#include "qs/model/kv_cache.h"

#include <string>

#include "qs/error.h"

namespace qs::model {

KvCache::KvCache(const ModelConfig& config, int capacity) : capacity_(capacity) {
    if (capacity <= 0 || capacity > config.maxPositionEmbeddings)
        throw Error("kv cache: capacity " + std::to_string(capacity) + " outside 1.." +
                    std::to_string(config.maxPositionEmbeddings));
    layers_.resize(static_cast<std::size_t>(config.numLayers));
    for (Layer& l : layers_) {
        l.k.resize(capacity, config.kvDim());
        l.v.resize(capacity, config.kvDim());
    }
}

const KvCache::Layer& KvCache::at(int layer) const {
    if (layer < 0 || static_cast<std::size_t>(layer) >= layers_.size())
        throw Error("kv cache: no layer " + std::to_string(layer));
    return layers_[static_cast<std::size_t>(layer)];
}

void KvCache::append(int layer, const MatrixF& k, const MatrixF& v) {
    Layer& l = const_cast<Layer&>(at(layer));
    if (k.cols() != l.k.cols() || v.cols() != l.v.cols() || k.rows() != v.rows())
        throw Error("kv cache: appended keys/values have the wrong shape");
    if (l.length + k.rows() > capacity_)
        throw Error("kv cache: " + std::to_string(l.length + k.rows()) + " positions exceed the capacity of " +
                    std::to_string(capacity_));
    l.k.middleRows(l.length, k.rows()) = k;
    l.v.middleRows(l.length, v.rows()) = v;
    l.length += static_cast<int>(k.rows());
}

DeltaNetState& KvCache::deltaNetState(int layer) { return const_cast<Layer&>(at(layer)).deltaNet; }

void KvCache::advance(int layer, int positions) {
    Layer& l = const_cast<Layer&>(at(layer));
    if (positions < 0 || l.length + positions > capacity_)
        throw Error("kv cache: " + std::to_string(l.length + positions) + " positions exceed the capacity of " +
                    std::to_string(capacity_));
    l.length += positions;
}

Eigen::Ref<const MatrixF> KvCache::keys(int layer) const {
    const Layer& l = at(layer);
    return l.k.topRows(l.length);
}

Eigen::Ref<const MatrixF> KvCache::values(int layer) const {
    const Layer& l = at(layer);
    return l.v.topRows(l.length);
}

}  // namespace qs::model
