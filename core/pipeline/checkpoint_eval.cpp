#include "qs/pipeline/checkpoint_eval.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "qs/error.h"
#include "qs/model/model_config_fields.h"
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

}  // namespace

void requireSameModelShape(const model::ModelConfig& a, const model::ModelConfig& b, const std::string& aName,
                           const std::string& bName) {
    // Everything the forward pass reads: two configs that agree on the sizes but not on these run
    // two different models (a KL between them measures the difference, not the quantization).
    std::string differences;
    // A quantization may untie a tied lm_head (--rotate's export: the rotated lm_head is no longer the
    // embedding); the quantized model then reads its own copy, and runs the same forward pass.
    model::ModelConfig untied = b;
    if (a.tieWordEmbeddings && !b.tieWordEmbeddings) untied.tieWordEmbeddings = true;
    for (const std::string& d : model::forwardPassDifferences(a, untied))
        differences += (differences.empty() ? "" : ", ") + d;
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
