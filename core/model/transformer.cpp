#include "qs/model/transformer.h"

#include <string>

#include "qs/error.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/rms_norm.h"

namespace qs::model {

Transformer::Transformer(ModelConfig config, std::shared_ptr<const WeightSource> weights, Options options)
    : config_(std::move(config)), weights_(std::move(weights)), options_(options), rope_(config_) {
    config_.validate();
    if (config_.ropeLocalTheta > 0.0) localRope_.emplace(config_.headDim, config_.ropeLocalTheta, RopeScaling{});
    if (!weights_) throw Error("transformer: no weights");
    finalNorm_ = weights_->finalNorm();
    if (finalNorm_.size() != config_.hiddenSize) throw Error("transformer: final norm has the wrong size");
}

Transformer Transformer::fromCheckpoint(const io::Checkpoint& checkpoint, Options options) {
    ModelConfig config = ModelConfig::fromCheckpoint(checkpoint);
    auto weights = std::make_shared<CheckpointWeights>(checkpoint, config);
    return Transformer(std::move(config), std::move(weights), options);
}

MatrixF Transformer::embed(std::span<const TokenId> tokens) const {
    checkLength(static_cast<std::int64_t>(tokens.size()), 0);
    return embeddingRows(tokens);
}

MatrixF Transformer::embeddingRows(std::span<const TokenId> tokens) const {
    MatrixF rows = weights_->embeddingRows(tokens);
    if (config_.embeddingScale != 1.0) rows *= static_cast<float>(config_.embeddingScale);
    return rows;
}

const RotaryEmbedding& Transformer::ropeOf(int layer) const {
    return config_.usesLocalRope(layer) && localRope_ ? *localRope_ : rope_;
}

void Transformer::checkLength(std::int64_t tokens, std::int64_t first) const {
    if (tokens <= 0) throw Error("transformer: empty token sequence");
    if (first + tokens > config_.maxPositionEmbeddings)
        throw Error("transformer: " + std::to_string(first + tokens) + " positions exceed max_position_embeddings " +
                    std::to_string(config_.maxPositionEmbeddings));
}

void Transformer::runLayer(int layer, MatrixF& hidden, const LinearInputHook& hook) {
    checkLength(hidden.rows(), 0);
    runLayerAt(layer, hidden, 0, nullptr, &hook);
}

void Transformer::runLayer(int layer, const LayerWeights& weights, MatrixF& hidden, const LinearInputHook& hook,
                           const KeyValueHook& keyValueHook, const LayerMath* math) const {
    runLayerWith(layer, weights, hidden, hook, keyValueHook, math, false);
}

void Transformer::observeLayer(int layer, const LayerWeights& weights, const MatrixF& hidden,
                               const LinearInputHook& hook, const KeyValueHook& keyValueHook,
                               const LayerMath* math) const {
    MatrixF copy = hidden;
    runLayerWith(layer, weights, copy, hook, keyValueHook, math, true);
}

void Transformer::runLayerWith(int layer, const LayerWeights& weights, MatrixF& hidden, const LinearInputHook& hook,
                               const KeyValueHook& keyValueHook, const LayerMath* math, bool outputUnread) const {
    if (layer < 0 || layer >= config_.numLayers) throw Error("transformer: no decoder layer " + std::to_string(layer));
    checkLength(hidden.rows(), 0);
    if (hidden.cols() != config_.hiddenSize)
        throw Error("transformer: hidden states have " + std::to_string(hidden.cols()) + " columns, the model " +
                    std::to_string(config_.hiddenSize));
    runDecoderLayer(weights, hidden,
                    DecoderLayerContext{config_, ropeOf(layer), layer, 0, nullptr, &hook, &keyValueHook,
                                        math != nullptr ? math : math_.get(), hookSeesAllTokens_, outputUnread});
}

void Transformer::runLayerAt(int layer, MatrixF& hidden, int firstPosition, KvCache* cache,
                             const LinearInputHook* hook) {
    if (hidden.cols() != config_.hiddenSize)
        throw Error("transformer: hidden states have " + std::to_string(hidden.cols()) + " columns, the model " +
                    std::to_string(config_.hiddenSize));
    const LayerWeights& w = layerWeights(layer);
    runDecoderLayer(w, hidden,
                    DecoderLayerContext{config_, ropeOf(layer), layer, firstPosition, cache, hook, nullptr, math_.get(),
                                        hookSeesAllTokens_});
}

MatrixF Transformer::finalLogits(const MatrixF& hidden) const {
    return weights_->lmHead(rmsNorm(hidden, finalNorm_, config_.rmsNormEps, config_.arch.normOffset), layerMath());
}

MatrixF Transformer::forward(std::span<const TokenId> tokens) {
    MatrixF hidden = embed(tokens);
    for (int i = 0; i < config_.numLayers; ++i) runLayerAt(i, hidden, 0, nullptr, nullptr);
    return finalLogits(hidden);
}

MatrixF Transformer::forward(std::span<const TokenId> tokens, KvCache& cache) {
    const int first = cache.length();
    checkLength(static_cast<std::int64_t>(tokens.size()), first);
    MatrixF hidden = embeddingRows(tokens);
    for (int i = 0; i < config_.numLayers; ++i) runLayerAt(i, hidden, first, &cache, nullptr);
    return finalLogits(hidden);
}

const LayerWeights& Transformer::layerWeights(int layer) {
    if (layer < 0 || layer >= config_.numLayers) throw Error("transformer: no decoder layer " + std::to_string(layer));
    if (const auto it = cache_.find(layer); it != cache_.end()) return it->second;
    if (!options_.keepAllLayers) cache_.clear();  // drop the previous layer before converting the next
    return cache_.emplace(layer, load(layer)).first->second;
}

LayerWeights Transformer::load(int layer) const {
    LayerWeights w = weights_->layer(layer);
    for (const auto& [key, provider] : overrides_) {
        if (key.first != layer) continue;
        Linear& target = w.linear(key.second);
        MatrixF replacement = provider();
        if (replacement.rows() != target.weight.rows() || replacement.cols() != target.weight.cols())
            throw Error("transformer: override of layer " + std::to_string(layer) + " " + key.second + " is " +
                        std::to_string(replacement.rows()) + "x" + std::to_string(replacement.cols()) + ", expected " +
                        std::to_string(target.weight.rows()) + "x" + std::to_string(target.weight.cols()));
        target.weight = std::move(replacement);
    }
    for (const auto& [key, serving] : serving_) {
        if (key.first != layer) continue;
        w.linear(key.second).input = serving.first;
        w.linear(key.second).cacheScale = serving.second;
    }
    return w;
}

void Transformer::overrideLinear(int layer, std::string_view module, WeightProvider weight) {
    if (layer < 0 || layer >= config_.numLayers) throw Error("transformer: no decoder layer " + std::to_string(layer));
    checkModuleName(layer, module);  // rejects unknown module names now rather than at the next run
    overrides_[{layer, std::string(module)}] = std::move(weight);
    cache_.erase(layer);
}

void Transformer::setServingQuantization(int layer, std::string_view module, quant::ActivationQuant input,
                                         float cacheScale) {
    if (layer < 0 || layer >= config_.numLayers) throw Error("transformer: no decoder layer " + std::to_string(layer));
    checkModuleName(layer, module);
    serving_[{layer, std::string(module)}] = {input, cacheScale};
    cache_.erase(layer);
}

void Transformer::checkModuleName(int layer, std::string_view module) const {
    LayerWeights shape;  // names only: the attention's linears, a sparse layer's router and experts or the MLP's
    shape.attention = config_.attentionLayout(layer);
    if (config_.isMoeLayer(layer)) {
        shape.moeNames = config_.moe.names;
        shape.experts.resize(static_cast<std::size_t>(config_.moe.numExperts));
    }
    shape.linear(module);
}

void Transformer::clearOverrides() {
    if (overrides_.empty() && serving_.empty()) return;
    overrides_.clear();
    serving_.clear();
    cache_.clear();
}

}  // namespace qs::model
