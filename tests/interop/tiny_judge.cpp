#include "tiny_judge.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "qs/cancel_token.h"
#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/gguf_export.h"

#include "interop_test_support.h"
#include "llama_judge.h"

namespace qs::interop {

namespace {

// A checkpoint's weights with each decoder layer edited (a negative control's missing feature).
class EditedWeights final : public model::WeightSource {
public:
    EditedWeights(std::shared_ptr<const model::WeightSource> inner, std::function<void(model::LayerWeights&)> edit)
        : inner_(std::move(inner)), edit_(std::move(edit)) {}
    model::LayerWeights layer(int index) const override {
        model::LayerWeights w = inner_->layer(index);
        if (edit_) edit_(w);
        return w;
    }
    MatrixF embeddingRows(std::span<const model::TokenId> tokens) const override {
        return inner_->embeddingRows(tokens);
    }
    VectorF finalNorm() const override { return inner_->finalNorm(); }
    MatrixF lmHead(const MatrixF& normed, const model::LayerMath& math) const override {
        return inner_->lmHead(normed, math);
    }

private:
    std::shared_ptr<const model::WeightSource> inner_;
    std::function<void(model::LayerWeights&)> edit_;
};

}  // namespace

double klWith(const nlohmann::json& theirs, const io::Checkpoint& checkpoint, const std::vector<model::TokenId>& tokens,
              const Control& control, std::size_t from) {
    model::ModelConfig config = model::ModelConfig::fromCheckpoint(checkpoint);
    auto weights = std::make_shared<const model::CheckpointWeights>(checkpoint, config);
    if (control.config) control.config(config);
    model::Transformer transformer(config, std::make_shared<const EditedWeights>(weights, control.layer));
    const MatrixF logits = transformer.forward(tokens);
    const auto rows = static_cast<Eigen::Index>(tokens.size() - from);
    const nlohmann::json tail(theirs.begin() + static_cast<std::ptrdiff_t>(from), theirs.end());
    const KlFigures k = compareDistributions(tail, logits.bottomRows(rows));
    std::printf("%-36s mean KL(llama.cpp || QuantScope) = %.3g, max %.3g, same top token %zu/%zu (positions %zu-%zu)\n",
                control.feature.c_str(), k.mean, k.max, k.sameTop, k.positions, from, tokens.size() - 1);
    return k.mean;
}

KlFigures compareDistributions(const nlohmann::json& theirs, const MatrixF& ourLogits) {
    KlFigures k;
    for (Eigen::Index t = 0; t < ourLogits.rows(); ++t) {
        const auto& p = theirs.at(static_cast<std::size_t>(t));
        const auto row = ourLogits.row(t).cast<double>();
        const double maxLogit = row.maxCoeff();
        const double logSum = maxLogit + std::log((row.array() - maxLogit).exp().sum());
        double kl = 0.0, bestTheirs = -1.0;
        Eigen::Index theirTop = 0, ourTop = 0;
        row.maxCoeff(&ourTop);
        for (Eigen::Index v = 0; v < row.size(); ++v) {
            const double pv = p.at(static_cast<std::size_t>(v)).get<double>();
            if (pv > bestTheirs) bestTheirs = pv, theirTop = v;
            if (pv > 0.0) kl += pv * (std::log(pv) - (row[v] - logSum));
        }
        if (std::getenv("QS_INTEROP_VERBOSE")) std::printf("position %ld: KL %.3g\n", long(t), kl);
        k.mean += kl;
        k.max = std::max(k.max, kl);
        k.sameTop += theirTop == ourTop;
        ++k.positions;
    }
    k.mean /= static_cast<double>(k.positions);
    return k;
}

std::vector<model::TokenId> demoEvalTokens(std::size_t count) {
    std::ifstream in(kDemo / "eval.txt", std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto ids = model::Tokenizer::fromFile(kDemo).encode(text);
    if (ids.size() < count) throw Error("the demo's eval.txt has only " + std::to_string(ids.size()) + " tokens");
    return {ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(count)};
}

nlohmann::json llamaCppOnF32Export(const std::filesystem::path& checkpoint, const std::filesystem::path& dir,
                                   const std::vector<model::TokenId>& tokens) {
    pipeline::GgufExportOptions options;
    options.chooser = pipeline::uniformGgufType(io::GgmlType::F32);
    const std::filesystem::path gguf = pipeline::writeGguf(
        io::Checkpoint::open(checkpoint), dir / (checkpoint.filename().string() + ".gguf"), options, {}, CancelToken{});
    return runLlamaJudge({{"model", gguf.string()}, {"evaluate", {tokens}}, {"vocabulary", 320}, {"threads", 2}});
}

}  // namespace qs::interop
