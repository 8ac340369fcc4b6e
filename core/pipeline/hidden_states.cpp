#include "hidden_states.h"

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
                     const model::LayerMath* math, const SequenceDone& sequenceDone) {
    const auto resident = (math != nullptr ? *math : model.layerMath()).keepResident(weights);
    std::size_t done = 0;
    hidden.observe(
        [&](const MatrixF& h) {
            MatrixF copy = h;
            model.runLayer(layer, weights, copy, hook, {}, math);
            if (sequenceDone) sequenceDone(++done);
        },
        cancel);
}

}  // namespace qs::pipeline
