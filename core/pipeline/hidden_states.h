#pragma once
// Hidden states of a set of token sequences travelling through a model one decoder layer at a time:
// what calibration, the Job's evaluation and checkpoint evaluation all keep between layers.
#include <vector>

#include "qs/matrix.h"
#include "qs/model/decoder_layer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/cancel_token.h"

namespace qs::pipeline {

using Hidden = std::vector<MatrixF>;   // one [T, hidden] matrix per sequence

Hidden embedAll(const model::Transformer& model, const TokenSequences& sequences);

// Runs decoder layer `layer` over every sequence in place, polling `cancel` between sequences.
void runLayerAll(model::Transformer& model, int layer, Hidden& hidden, const CancelToken& cancel,
                 const model::LinearInputHook& hook = {});
// The same with weights the caller holds (nothing is loaded or cached by `model`).
void runLayerAll(const model::Transformer& model, int layer, const model::LayerWeights& weights, Hidden& hidden,
                 const CancelToken& cancel, const model::LinearInputHook& hook = {},
                 const model::KeyValueHook& keyValueHook = {});
// Shows `hook` the layer's linear inputs of every sequence without changing `hidden` (one sequence
// is copied at a time).
void observeLayerAll(const model::Transformer& model, int layer, const model::LayerWeights& weights,
                     const Hidden& hidden, const CancelToken& cancel, const model::LinearInputHook& hook);

}  // namespace qs::pipeline
