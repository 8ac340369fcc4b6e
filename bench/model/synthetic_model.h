#pragma once
// A Llama-shaped model with random weights held in memory (model::ModelWeights), for the forward
// and calibration benchmarks: head size 64, four query heads per KV head, an MLP 2.75x the width.
#include <memory>

#include "qs/model/model_config.h"
#include "qs/model/weight_source.h"

#include "../quant/bench_common.h"

namespace qs::bench {

inline model::ModelConfig llamaShape(int hidden, int layers, int vocab) {
    model::ModelConfig c;
    c.modelType = "llama";
    c.hiddenSize = hidden;
    c.intermediateSize = hidden * 11 / 4;
    c.numLayers = layers;
    c.headDim = 64;
    c.numHeads = hidden / 64;
    c.numKvHeads = c.numHeads / 4;
    c.vocabSize = vocab;
    c.maxPositionEmbeddings = 8192;
    c.rmsNormEps = 1e-5;
    c.validate("benchmark model");
    return c;
}

// One decoder layer of Llama-3-8B: hidden 4096, MLP 14336, 32 query heads and 8 KV heads of 128.
inline model::ModelConfig llama3_8bShape(int layers, int vocab) {
    model::ModelConfig c = llamaShape(4096, layers, vocab);
    c.intermediateSize = 14336;
    c.headDim = 128;
    c.numHeads = 32;
    c.numKvHeads = 8;
    c.validate("benchmark model");
    return c;
}

inline model::Linear randomLinear(std::int64_t out, std::int64_t in, unsigned seed) {
    model::Linear linear;
    linear.weight = benchWeights(out, in, seed);
    return linear;
}

inline model::LayerWeights randomLayer(const model::ModelConfig& c, unsigned seed) {
    model::LayerWeights w;
    w.inputNorm = VectorF::Ones(c.hiddenSize);
    w.postAttentionNorm = VectorF::Ones(c.hiddenSize);
    w.q = randomLinear(c.qDim(), c.hiddenSize, seed);
    w.k = randomLinear(c.kvDim(), c.hiddenSize, seed + 1);
    w.v = randomLinear(c.kvDim(), c.hiddenSize, seed + 2);
    w.o = randomLinear(c.hiddenSize, c.qDim(), seed + 3);
    w.gate = randomLinear(c.intermediateSize, c.hiddenSize, seed + 4);
    w.up = randomLinear(c.intermediateSize, c.hiddenSize, seed + 5);
    w.down = randomLinear(c.hiddenSize, c.intermediateSize, seed + 6);
    return w;
}

inline std::shared_ptr<model::ModelWeights> randomModel(const model::ModelConfig& c) {
    auto m = std::make_shared<model::ModelWeights>();
    m->embedding = benchWeights(c.vocabSize, c.hiddenSize, 100);
    for (int l = 0; l < c.numLayers; ++l) m->layers.push_back(randomLayer(c, 10u * unsigned(l) + 1));
    m->norm = VectorF::Ones(c.hiddenSize);
    m->lmHeadWeight = benchWeights(c.vocabSize, c.hiddenSize, 101);
    return m;
}

// Multiply-adds x2 of one decoder layer's linears over `tokens` positions.
inline double linearFlops(const model::ModelConfig& c, double tokens) {
    const double h = c.hiddenSize, q = c.qDim(), kv = c.kvDim(), ff = c.intermediateSize;
    return 2.0 * tokens * (h * q + 2.0 * h * kv + q * h + 3.0 * h * ff);
}

// Attention's two products per head as computed: the full T x T score matrix (the causal mask is
// applied after), then scores x V.
inline double attentionFlops(const model::ModelConfig& c, double tokens) {
    return 4.0 * tokens * tokens * c.headDim * c.numHeads;
}

}  // namespace qs::bench
