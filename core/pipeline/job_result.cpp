#include "qs/pipeline/job_result.h"

namespace qs::pipeline {

std::size_t layerCount(const MethodResult& result) { return result.stored ? result.stored->size() : result.layers.size(); }

QuantizedLayer layerAt(const MethodResult& result, std::size_t layer) {
    return result.stored ? result.stored->load(layer) : result.layers.at(layer);
}

const std::vector<QuantizedLayer>& linearHeaders(const MethodResult& result) {
    return result.stored ? result.stored->headers() : result.layers;
}

MethodResult resultInRam(const MethodResult& result) {
    MethodResult copy = result;
    if (!copy.stored) return copy;
    copy.layers.clear();
    for (std::size_t i = 0; i < result.stored->size(); ++i) copy.layers.push_back(result.stored->load(i));
    copy.stored.reset();
    return copy;
}

}  // namespace qs::pipeline
