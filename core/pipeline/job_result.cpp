#include "qs/pipeline/job_result.h"

namespace qs::pipeline {

std::size_t layerCount(const MethodResult& result) {
    return result.stored ? result.stored->size() : result.layers.size();
}

QuantizedLayer layerAt(const MethodResult& result, std::size_t layer) {
    return result.stored ? result.stored->load(layer) : result.layers.at(layer);
}

const std::vector<QuantizedLayer>& linearHeaders(const MethodResult& result) {
    return result.stored ? result.stored->headers() : result.layers;
}

}  // namespace qs::pipeline
