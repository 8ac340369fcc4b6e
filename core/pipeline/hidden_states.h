#pragma once
// Hidden states of a set of token sequences travelling through a model one decoder layer at a time:
// what calibration, the Job's evaluation and checkpoint evaluation all keep between layers
// (HiddenStream: in memory, or spilled to a work folder a sequence at a time).
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/model/decoder_layer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/layer_statistics.h"

#include "hidden_stream.h"

namespace qs::pipeline {

Hidden embedAll(const model::Transformer& model, const TokenSequences& sequences);
// The same as a stream: in memory, or written a sequence at a time to a new file at `spillFile`.
HiddenStream embedStream(const model::Transformer& model, const TokenSequences& sequences,
                         const std::optional<std::filesystem::path>& spillFile);

// Called after each sequence a pass has run, with how many it has run so far (a layer's progress).
using SequenceDone = std::function<void(std::size_t done)>;

// Runs decoder layer `layer` over every sequence in place, polling `cancel` between sequences.
void runLayerAll(model::Transformer& model, int layer, HiddenStream& hidden, const CancelToken& cancel,
                 const model::LinearInputHook& hook = {});
// The same with weights the caller holds (nothing is loaded or cached by `model`), the GEMMs on `math`
// (null: the model's; the calibration passes' BF16 LayerMath).
void runLayerAll(const model::Transformer& model, int layer, const model::LayerWeights& weights, HiddenStream& hidden,
                 const CancelToken& cancel, const model::LinearInputHook& hook = {},
                 const model::KeyValueHook& keyValueHook = {}, const model::LayerMath* math = nullptr,
                 const SequenceDone& sequenceDone = {});
// Shows `hook` the layer's linear inputs of every sequence without changing `hidden` (one sequence
// is copied at a time).
void observeLayerAll(const model::Transformer& model, int layer, const model::LayerWeights& weights,
                     const HiddenStream& hidden, const CancelToken& cancel, const model::LinearInputHook& hook,
                     const model::LayerMath* math = nullptr, const model::KeyValueHook& keyValueHook = {},
                     const SequenceDone& sequenceDone = {});

// GPTAQ's observation: each sequence of `reference` (the full-precision model's stream) and then the
// same sequence of `hidden` run through the layer (copies; neither stream changes), and `hook` shown
// each of `hidden`'s linear inputs beside the reference's input to the same linear; `sequenceDone` after
// each pair.
void observeLayerPaired(const model::Transformer& reference, const HiddenStream& referenceHidden,
                        const model::Transformer& model, const HiddenStream& hidden, int layer,
                        const model::LayerWeights& weights, const CancelToken& cancel, const PairedInputHook& hook,
                        const model::LayerMath* math = nullptr, const SequenceDone& sequenceDone = {});

}  // namespace qs::pipeline
