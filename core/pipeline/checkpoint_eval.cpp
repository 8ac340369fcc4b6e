#include "qs/pipeline/checkpoint_eval.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <memory>
#include <optional>
#include <sstream>
#include <type_traits>

#include "qs/error.h"
#include "qs/model/tokenizer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/model_checkpoint.h"

#include "hidden_states.h"
#include "kl_scoring.h"

namespace qs::pipeline {
namespace {

std::string formatLabel(const formats::FormatInfo& info) {
    std::string label(formats::formatName(info.format));
    if (!info.variant.empty()) label += " (" + info.variant + ")";
    return label;
}

// One side of the comparison: a checkpoint, its decoded weights and the transformer over them.
struct Side {
    io::Checkpoint checkpoint;
    model::ModelConfig config;
    std::shared_ptr<const DecodedWeights> weights;
    std::unique_ptr<model::Transformer> model;

    Side(const std::filesystem::path& path, bool allowNonFinite)
        : checkpoint(openModelCheckpoint(path, allowNonFinite)),
          config(model::ModelConfig::fromCheckpoint(checkpoint)) {}

    void load(bool allowNonFinite) {
        weights = std::make_shared<const DecodedWeights>(checkpoint, config,
                                                         formats::DecodeOptions{.allowNonFinite = allowNonFinite});
        model = std::make_unique<model::Transformer>(config, weights);
    }
};

std::string factorsText(const std::vector<double>& factors) {
    std::ostringstream out;
    out << std::setprecision(17);
    for (double f : factors) out << f << ' ';
    return out.str();
}

}  // namespace

void requireSameModelShape(const model::ModelConfig& a, const model::ModelConfig& b, const std::string& aName,
                           const std::string& bName) {
    std::string differences;
    const auto differ = [&](const char* field, const std::string& x, const std::string& y) {
        if (x == y) return;
        differences += (differences.empty() ? "" : ", ") + std::string(field) + " " + x + " vs " + y;
    };
    const auto compare = [&](const char* field, auto x, auto y) {
        if constexpr (std::is_same_v<decltype(x), std::string>) {
            differ(field, "'" + x + "'", "'" + y + "'");
        } else if constexpr (std::is_same_v<decltype(x), double>) {
            std::ostringstream a, b;
            a << std::setprecision(17) << x;
            b << std::setprecision(17) << y;
            differ(field, a.str(), b.str());
        } else {
            differ(field, std::to_string(x), std::to_string(y));
        }
    };
    // Everything the forward pass reads: two configs that agree on the sizes but not on these run
    // two different models (a KL between them measures the difference, not the quantization).
    compare("model_type", a.modelType, b.modelType);
    compare("num_hidden_layers", a.numLayers, b.numLayers);
    compare("hidden_size", a.hiddenSize, b.hiddenSize);
    compare("intermediate_size", a.intermediateSize, b.intermediateSize);
    compare("num_attention_heads", a.numHeads, b.numHeads);
    compare("num_key_value_heads", a.numKvHeads, b.numKvHeads);
    compare("head_dim", a.headDim, b.headDim);
    compare("vocab_size", a.vocabSize, b.vocabSize);
    compare("rms_norm_eps", a.rmsNormEps, b.rmsNormEps);
    compare("rope_theta", a.ropeTheta, b.ropeTheta);
    compare("rope_scaling.type", static_cast<int>(a.ropeScaling.type), static_cast<int>(b.ropeScaling.type));
    compare("rope_scaling.factor", a.ropeScaling.factor, b.ropeScaling.factor);
    compare("rope_scaling.low_freq_factor", a.ropeScaling.lowFreqFactor, b.ropeScaling.lowFreqFactor);
    compare("rope_scaling.high_freq_factor", a.ropeScaling.highFreqFactor, b.ropeScaling.highFreqFactor);
    compare("rope_scaling.original_max_position_embeddings", a.ropeScaling.originalMaxPositionEmbeddings,
            b.ropeScaling.originalMaxPositionEmbeddings);
    compare("rope_scaling.attention_factor", a.ropeScaling.attentionFactor, b.ropeScaling.attentionFactor);
    compare("rope_scaling.short_factor", factorsText(a.ropeScaling.shortFactor),
            factorsText(b.ropeScaling.shortFactor));
    compare("rope_scaling.long_factor", factorsText(a.ropeScaling.longFactor), factorsText(b.ropeScaling.longFactor));
    compare("partial_rotary_factor (rotary dimensions)", a.rotaryDims(), b.rotaryDims());
    compare("tie_word_embeddings", a.tieWordEmbeddings, b.tieWordEmbeddings);
    compare("attention_bias (q/k/v)", a.qkvBias, b.qkvBias);
    compare("attention_bias (o_proj)", a.outputBias, b.outputBias);
    compare("mlp_bias", a.mlpBias, b.mlpBias);
    compare("q/k norm", a.qkNorm, b.qkNorm);
    compare("sliding_window", a.slidingWindow, b.slidingWindow);
    if (!differences.empty())
        throw Error(aName + " and " + bName + " are not two versions of one model (" + differences +
                    "); KL can only compare a model with its own quantization");
}

namespace {

// Whether the checkpoint carries a tokenizer of its own (a GGUF carries one in its metadata).
bool hasOwnTokenizer(const io::Checkpoint& checkpoint) {
    if (std::filesystem::exists(checkpoint.root() / "tokenizer.json")) return true;
    return checkpoint.gguf() != nullptr && checkpoint.summary().hasTokenizer;
}

std::optional<std::string> tokenText(const model::Tokenizer& t, model::TokenId id) {
    try {
        return t.idToToken(id);
    } catch (const Error&) {
        return std::nullopt;
    }
}

// The id where two vocabularies disagree on their common ids, or -1. Their sizes may differ only by
// the unused padding a GGUF adds up to the embedding's rows ("[PAD300]").
model::TokenId firstDifferentToken(const model::Tokenizer& a, const model::Tokenizer& b) {
    const auto common = static_cast<model::TokenId>(std::min(a.vocabSize(), b.vocabSize()));
    for (model::TokenId id = 0; id < common; ++id)
        if (tokenText(a, id) != tokenText(b, id)) return id;
    return -1;
}

}  // namespace

TokenSequences sharedTokenWindows(const io::Checkpoint& original, const io::Checkpoint& quantized,
                                  const std::vector<std::string>& texts, int samples, int seqLen,
                                  const std::string& sourceName) {
    const model::Tokenizer tokenizer = model::Tokenizer::forCheckpoint(original);
    TokenSequences windows = tokenWindows(tokenizer, texts, samples, seqLen, sourceName);
    if (!hasOwnTokenizer(quantized)) return windows;
    const model::Tokenizer own = model::Tokenizer::forCheckpoint(quantized);
    if (const model::TokenId id = firstDifferentToken(tokenizer, own); id >= 0)
        throw Error(original.root().string() + " and " + quantized.root().string() +
                    " have different tokenizers (token " + std::to_string(id) + " is '" +
                    tokenText(tokenizer, id).value_or("") + "' vs '" + tokenText(own, id).value_or("") + "')");
    if (tokenWindows(own, texts, samples, seqLen, sourceName) != windows)
        throw Error(original.root().string() + " and " + quantized.root().string() + " tokenize " + sourceName +
                    " differently; KL needs one vocabulary");
    return windows;
}

CheckpointEvalResult evaluateCheckpoints(const CheckpointEvalPlan& plan, const ProgressCallback& progress,
                                         const CancelToken& cancel) {
    const auto start = std::chrono::steady_clock::now();
    if (plan.evaluation.empty()) throw Error("no evaluation text to compare the checkpoints on");
    Side original(plan.original, plan.allowNonFinite), quantized(plan.quantized, plan.allowNonFinite);
    requireSameModelShape(original.config, quantized.config, original.checkpoint.root().string(),
                          quantized.checkpoint.root().string());
    original.load(plan.allowNonFinite);
    quantized.load(plan.allowNonFinite);

    const int layers = original.config.numLayers;
    const auto report = [&](const std::string& stage, int step, int steps, double fraction,
                            const std::string& message) {
        if (progress) progress({stage, step, steps, fraction, message});
    };
    HiddenStream originalHidden(embedAll(*original.model, plan.evaluation));
    HiddenStream quantizedHidden(embedAll(*quantized.model, plan.evaluation));
    for (int layer = 0; layer < layers; ++layer) {
        report("evaluate", layer + 1, layers, 0.9 * layer / layers,
               "layer " + std::to_string(layer + 1) + "/" + std::to_string(layers));
        runLayerAll(*original.model, layer, originalHidden, cancel);
        runLayerAll(*quantized.model, layer, quantizedHidden, cancel);
    }
    const auto kl =
        scoreKl({original.model.get(), &originalHidden}, {{quantized.model.get(), &quantizedHidden}}, plan.evaluation,
                cancel, [&](std::size_t i, std::size_t n) {
                    report("score", int(i) + 1, int(n), 0.9 + 0.1 * double(i) / double(n), "KL against the original");
                });

    CheckpointEvalResult result;
    result.kl = kl.front().report();
    result.originalFormat = formatLabel(original.weights->format());
    result.quantizedFormat = formatLabel(quantized.weights->format());
    result.evaluationTokens = tokenCount(plan.evaluation);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report("done", layers, layers, 1.0, "finished");
    return result;
}

}  // namespace qs::pipeline
