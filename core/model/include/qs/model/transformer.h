#pragma once
// Transformer: the forward pass of a Llama / Mistral / Qwen2 / Qwen3 decoder, in f32 on the CPU.
//
// Two ways to run it:
//  * forward(tokens): logits [T, vocab] of one sequence;
//  * layer by layer, as calibration does: embed(tokens), runLayer(i, hidden, hook) for each layer,
//    finalLogits(hidden). Only the hidden states travel between layers.
// Weights come from a WeightSource one decoder layer at a time; only the current layer is kept in f32
// (or every layer, with Options::keepAllLayers, for repeated decoding of a small model). Any linear can
// be replaced, e.g. by a quantized version, and is then materialized only when its layer runs.
//
// Not thread-safe: the layer cache is mutable state. Eigen's GEMMs use all OpenMP threads; with
// setLayerMath() the GEMMs and attention run elsewhere (a CUDA device).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "qs/io/checkpoint.h"
#include "qs/matrix.h"
#include "qs/model/decoder_layer.h"
#include "qs/model/kv_cache.h"
#include "qs/model/model_config.h"
#include "qs/model/rope.h"
#include "qs/model/weight_source.h"

namespace qs::model {

// Produces the f32 weight [out, in] that replaces one linear, when its layer is loaded.
using WeightProvider = std::function<MatrixF()>;

struct TransformerOptions {
    bool keepAllLayers = false;  // cache every layer's f32 weights (small models, generation)
};

class Transformer {
public:
    using Options = TransformerOptions;

    Transformer(ModelConfig config, std::shared_ptr<const WeightSource> weights, Options options = {});
    // Config from the checkpoint's config.json, weights through CheckpointWeights.
    static Transformer fromCheckpoint(const io::Checkpoint& checkpoint, Options options = {});

    const ModelConfig& config() const { return config_; }

    // --- layer by layer -------------------------------------------------------------------------
    MatrixF embed(std::span<const TokenId> tokens) const;  // [T, hidden]
    // Runs decoder layer `layer` over hidden [T, hidden] in place; row t is at position t.
    void runLayer(int layer, MatrixF& hidden, const LinearInputHook& hook = {});
    // The same with weights the caller holds (e.g. a layer whose linears are being quantized one by
    // one); nothing is loaded or cached. `math` (null: the model's) runs its GEMMs: the calibration
    // passes' BF16 one (--matmul bf16).
    void runLayer(int layer, const LayerWeights& weights, MatrixF& hidden, const LinearInputHook& hook = {},
                  const KeyValueHook& keyValueHook = {}, const LayerMath* math = nullptr) const;
    // The layer run for its hooks alone, on a copy of `hidden` (calibration observing a stream it does not
    // move): the hooks see what runLayer shows them, bit for bit, and the GEMMs whose only reader is the
    // layer's output (the down projections: a quarter of a Llama layer's) are skipped.
    void observeLayer(int layer, const LayerWeights& weights, const MatrixF& hidden, const LinearInputHook& hook,
                      const KeyValueHook& keyValueHook = {}, const LayerMath* math = nullptr) const;
    MatrixF finalLogits(const MatrixF& hidden) const;  // final norm + lm_head: [T, vocab]

    // --- whole model ----------------------------------------------------------------------------
    MatrixF forward(std::span<const TokenId> tokens);  // [T, vocab]
    // Runs `tokens` after the positions already in `cache` (and appends theirs): [T, vocab].
    MatrixF forward(std::span<const TokenId> tokens, KvCache& cache);

    // --- where the arithmetic runs ---------------------------------------------------------------
    // Every layer's GEMMs and attention run on `math` (null: cpuLayerMath(), the default).
    void setLayerMath(std::shared_ptr<const LayerMath> math) { math_ = std::move(math); }
    const LayerMath& layerMath() const { return math_ ? *math_ : cpuLayerMath(); }
    // MoE calibration: the hooks of runLayer see every expert's input on every token
    // (DecoderLayerContext::hookSeesAllTokens); the forward pass routes as the model does either way.
    void setHookSeesAllExpertTokens(bool all) { hookSeesAllTokens_ = all; }

    // --- weights --------------------------------------------------------------------------------
    // The f32 weights of `layer` (with overrides applied), loaded now unless cached.
    const LayerWeights& layerWeights(int layer);
    // Replaces linear `module` (e.g. "mlp.down_proj") of `layer`; its bias, if any, is kept.
    void overrideLinear(int layer, std::string_view module, WeightProvider weight);
    // What the serving engine quantizes around linear `module` of `layer` (its input, its KV-cache scale:
    // Linear::input, Linear::cacheScale), set on the weights whenever the layer is loaded.
    void setServingQuantization(int layer, std::string_view module, quant::ActivationQuant input, float cacheScale);
    void clearOverrides();  // the weights and the serving quantization

private:
    void checkLength(std::int64_t tokens, std::int64_t first) const;
    void checkModuleName(int layer, std::string_view module) const;
    void runLayerAt(int layer, MatrixF& hidden, int firstPosition, KvCache* cache, const LinearInputHook* hook);
    void runLayerWith(int layer, const LayerWeights& weights, MatrixF& hidden, const LinearInputHook& hook,
                      const KeyValueHook& keyValueHook, const LayerMath* math, bool outputUnread) const;
    LayerWeights load(int layer) const;
    MatrixF embeddingRows(std::span<const TokenId> tokens) const;  // the source's rows × embeddingScale
    const RotaryEmbedding& ropeOf(int layer) const;                // Gemma's sliding layers: the local base

    ModelConfig config_;
    std::shared_ptr<const WeightSource> weights_;
    Options options_;
    RotaryEmbedding rope_;
    std::optional<RotaryEmbedding> localRope_;  // ropeLocalTheta's, when the config has one
    VectorF finalNorm_;
    std::map<std::pair<int, std::string>, WeightProvider, std::less<>> overrides_;
    std::map<std::pair<int, std::string>, std::pair<quant::ActivationQuant, float>, std::less<>> serving_;
    std::shared_ptr<const LayerMath> math_;
    bool hookSeesAllTokens_ = false;
    std::map<int, LayerWeights> cache_;  // one layer, or all with keepAllLayers
};

}  // namespace qs::model
