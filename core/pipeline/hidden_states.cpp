#include "hidden_states.h"

namespace qs::pipeline {

Hidden embedAll(const model::Transformer& model, const TokenSequences& sequences) {
    Hidden hidden;
    hidden.reserve(sequences.size());
    for (const auto& s : sequences) hidden.push_back(model.embed(s));
    return hidden;
}

void runLayerAll(model::Transformer& model, int layer, Hidden& hidden, const CancelToken& cancel,
                 const model::LinearInputHook& hook) {
    const auto resident = model.layerMath().keepResident(model.layerWeights(layer));
    for (auto& h : hidden) {
        cancel.throwIfCancelled();
        model.runLayer(layer, h, hook);
    }
}

void runLayerAll(const model::Transformer& model, int layer, const model::LayerWeights& weights, Hidden& hidden,
                 const CancelToken& cancel, const model::LinearInputHook& hook, const model::KeyValueHook& keyValueHook) {
    const auto resident = model.layerMath().keepResident(weights);
    for (auto& h : hidden) {
        cancel.throwIfCancelled();
        model.runLayer(layer, weights, h, hook, keyValueHook);
    }
}

void observeLayerAll(const model::Transformer& model, int layer, const model::LayerWeights& weights,
                     const Hidden& hidden, const CancelToken& cancel, const model::LinearInputHook& hook) {
    const auto resident = model.layerMath().keepResident(weights);
    for (const auto& h : hidden) {
        cancel.throwIfCancelled();
        MatrixF copy = h;
        model.runLayer(layer, weights, copy, hook);
    }
}

}  // namespace qs::pipeline
