#include "hidden_states.h"

#include <map>
#include <string>

#include "qs/error.h"

namespace qs::pipeline {

Hidden embedAll(const model::Transformer& model, const TokenSequences& sequences) {
    Hidden hidden;
    hidden.reserve(sequences.size());
    for (const auto& s : sequences) hidden.push_back(model.embed(s));
    return hidden;
}

HiddenStream embedStream(const model::Transformer& model, const TokenSequences& sequences,
                         const std::optional<std::filesystem::path>& spillFile) {
    if (!spillFile) return HiddenStream(embedAll(model, sequences));
    SequenceShape shape{{}, model.config().hiddenSize};
    for (const auto& s : sequences) shape.rows.push_back(std::int64_t(s.size()));
    {
        SequenceFile file = SequenceFile::create(*spillFile, shape);
        for (std::size_t i = 0; i < sequences.size(); ++i) file.write(i, model.embed(sequences[i]));
    }
    return HiddenStream::spilled(*spillFile, std::move(shape));
}

void runLayerAll(model::Transformer& model, int layer, HiddenStream& hidden, const CancelToken& cancel,
                 const model::LinearInputHook& hook) {
    const auto resident = model.layerMath().keepResident(model.layerWeights(layer));
    hidden.update([&](MatrixF& h) { model.runLayer(layer, h, hook); }, cancel);
}

void runLayerAll(const model::Transformer& model, int layer, const model::LayerWeights& weights, HiddenStream& hidden,
                 const CancelToken& cancel, const model::LinearInputHook& hook, const model::KeyValueHook& keyValueHook,
                 const model::LayerMath* math, const SequenceDone& sequenceDone) {
    const auto resident = (math != nullptr ? *math : model.layerMath()).keepResident(weights);
    std::size_t done = 0;
    hidden.update(
        [&](MatrixF& h) {
            model.runLayer(layer, weights, h, hook, keyValueHook, math);
            if (sequenceDone) sequenceDone(++done);
        },
        cancel);
}

void observeLayerAll(const model::Transformer& model, int layer, const model::LayerWeights& weights,
                     const HiddenStream& hidden, const CancelToken& cancel, const model::LinearInputHook& hook,
                     const model::LayerMath* math, const model::KeyValueHook& keyValueHook,
                     const SequenceDone& sequenceDone) {
    const auto resident = (math != nullptr ? *math : model.layerMath()).keepResident(weights);
    std::size_t done = 0;
    hidden.observe(
        [&](const MatrixF& h) {
            model.observeLayer(layer, weights, h, hook, keyValueHook, math);
            if (sequenceDone) sequenceDone(++done);
        },
        cancel);
}

void observeLayerPaired(const model::Transformer& reference, const HiddenStream& referenceHidden,
                        const model::Transformer& model, const HiddenStream& hidden, int layer,
                        const model::LayerWeights& weights, const CancelToken& cancel, const PairedInputHook& hook,
                        const model::LayerMath* math, const SequenceDone& sequenceDone) {
    if (referenceHidden.size() != hidden.size())
        throw Error("the full-precision calibration stream has " + std::to_string(referenceHidden.size()) +
                    " sequences, the method's " + std::to_string(hidden.size()));
    const auto resident = (math != nullptr ? *math : model.layerMath()).keepResident(weights);
    MatrixF referenceBuffer, buffer;
    for (std::size_t i = 0; i < hidden.size(); ++i) {
        cancel.throwIfCancelled();
        // One sequence's inputs of every linear at a time, by the first module that reads each.
        std::map<std::string, MatrixF, std::less<>> fullPrecision;
        reference.observeLayer(
            layer, weights, referenceHidden.sequence(i, referenceBuffer),
            [&](const model::LinearInput& in) {
                if (!in.modules.empty()) fullPrecision[std::string(in.modules.front())] = in.x;
            },
            {}, math);
        model.observeLayer(
            layer, weights, hidden.sequence(i, buffer),
            [&](const model::LinearInput& in) {
                if (in.modules.empty()) return;
                const auto found = fullPrecision.find(in.modules.front());
                if (found == fullPrecision.end())
                    throw Error("the full-precision model showed no input for " + std::string(in.modules.front()));
                hook(in, found->second);
            },
            {}, math);
        if (sequenceDone) sequenceDone(i + 1);
    }
}

}  // namespace qs::pipeline
