// Llama 4 as llama.cpp's llama4 runs it: tests/data/moe/llama4-tiny (scripts/make-tiny-llama4.py), exported as F32
// GGUF, gives llama.cpp's next-token distributions within mean KL 1e-5 of our forward pass on the Hugging Face
// checkpoint, and a negative control per feature (our forward pass without it) moves far away, so that each
// feature is seen to be both implemented and used. llama.cpp fixes the chunk (8192) and the temperature's floor
// (8192): the chunks and the NoPE layers' temperature are judged on a sequence of 8448 tokens, at the positions
// from 8192 on, where both act.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "qs/io/checkpoint.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/transformer.h"

#include "interop_test_support.h"
#include "llama_judge.h"
#include "tiny_judge.h"

using namespace qs;

namespace {

namespace fs = std::filesystem;

class Llama4Interop : public interop::JudgedTest {};

// The checkpoint's weights with each decoder layer edited (a negative control's missing feature).
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

struct Control {
    std::string feature;
    std::function<void(model::ModelConfig&)> config{};
    std::function<void(model::LayerWeights&)> layer{};
};

// Rows of each head of `w` reordered from interleaved pairs to halves: RoPE then pairs other elements.
void pairHalves(MatrixF& w, int heads) {
    const Eigen::Index d = w.rows() / heads;
    const MatrixF stored = w;
    for (Eigen::Index h = 0; h < heads; ++h)
        for (Eigen::Index i = 0; i < d / 2; ++i) {
            w.row(h * d + i) = stored.row(h * d + 2 * i);
            w.row(h * d + d / 2 + i) = stored.row(h * d + 2 * i + 1);
        }
}

// The mean KL over positions [from, end) of llama.cpp's distributions against our forward pass with `control`.
double klWith(const nlohmann::json& theirs, const io::Checkpoint& checkpoint, const std::vector<model::TokenId>& tokens,
              const Control& control, std::size_t from) {
    model::ModelConfig config = model::ModelConfig::fromCheckpoint(checkpoint);
    auto weights = std::make_shared<const model::CheckpointWeights>(checkpoint, config);
    if (control.config) control.config(config);
    model::Transformer transformer(config, std::make_shared<const EditedWeights>(weights, control.layer));
    const MatrixF logits = transformer.forward(tokens);
    const auto rows = static_cast<Eigen::Index>(tokens.size() - from);
    const nlohmann::json tail(theirs.begin() + static_cast<std::ptrdiff_t>(from), theirs.end());
    const interop::KlFigures k = interop::compareDistributions(tail, logits.bottomRows(rows));
    std::printf("%-36s mean KL(llama.cpp || QuantScope) = %.3g, max %.3g, same top token %zu/%zu (positions %zu-%zu)\n",
                control.feature.c_str(), k.mean, k.max, k.sameTop, k.positions, from, tokens.size() - 1);
    return k.mean;
}

void expectRunsAsInLlamaCpp(const fs::path& dir, const fs::path& source, const std::vector<model::TokenId>& tokens,
                            std::size_t from, const std::vector<Control>& controls, double jump) {
    const nlohmann::json answer = interop::llamaCppOnF32Export(source, dir, tokens);
    EXPECT_EQ(interop::missingKeyWarnings(answer), std::vector<std::string>{});
    for (const auto& w : answer.at("warnings")) std::printf("llama.cpp warning: %s\n", w.get<std::string>().c_str());
    const nlohmann::json& theirs = answer.at("distributions").at(0);
    const io::Checkpoint checkpoint = io::Checkpoint::open(source);
    EXPECT_LT(klWith(theirs, checkpoint, tokens, {"(as it is)"}, from), 1e-5);
    for (const Control& control : controls)
        EXPECT_GT(klWith(theirs, checkpoint, tokens, control, from), jump) << "without " << control.feature;
}

fs::path tinyLlama4() { return fs::path(QS_TEST_DATA_DIR) / "moe" / "llama4-tiny"; }

}  // namespace

// The short context: dense layers 0 and 2 (intermediate_size_mlp), MoE layers 1 and 3 whose router's sigmoid
// scales the two chosen experts' inputs, the shared expert, RoPE on interleaved pairs with llama3 scaling and the
// L2 q/k norm on layers 0-2, layer 3 without RoPE. Each control drops one of them.
TEST_F(Llama4Interop, Llama4RunsInLlamaCppAsTheCheckpointRunsInQuantScope) {
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(tinyLlama4()));
    ASSERT_TRUE(config.llama4.active());
    ASSERT_EQ(config.llama4.rope, (std::vector<bool>{true, true, true, false}));
    ASSERT_EQ(config.moe.scoring, model::RouterScoring::SigmoidScalesInput);
    ASSERT_TRUE(config.isMoeLayer(1) && config.isMoeLayer(3) && !config.isMoeLayer(0) && !config.isMoeLayer(2));
    ASSERT_NE(config.intermediateSize, config.moe.expertIntermediateSize);
    ASSERT_EQ(config.ropeScaling.type, model::RopeScalingType::Llama3);
    const std::vector<Control> controls{
        {"the shared expert", {}, [](model::LayerWeights& w) { w.moeNames.shared.clear(); }},
        {"the router scaling the input",
         [](model::ModelConfig& c) {
             // The same sigmoid top-k weights, applied to each expert's output instead.
             c.moe.scoring = model::RouterScoring::SigmoidGrouped;
             c.moe.numGroups = c.moe.topkGroups = 1;
             c.moe.normTopkProb = false;
             c.moe.routedScalingFactor = 1.0;
         }},
        {"NoPE (layer 3 rotating)", [](model::ModelConfig& c) { c.llama4.rope.assign(c.numLayers, true); }},
        {"the L2 q/k norm", [](model::ModelConfig& c) { c.llama4.l2QkNorm = false; }},
        {"interleaved RoPE pairs",
         {},
         [](model::LayerWeights& w) {
             pairHalves(w.q.weight, static_cast<int>(w.q.weight.rows() / 16));
             pairHalves(w.k.weight, static_cast<int>(w.k.weight.rows() / 16));
         }},
        {"llama3 RoPE scaling", [](model::ModelConfig& c) { c.ropeScaling = model::RopeScaling{}; }},
    };
    expectRunsAsInLlamaCpp(dir_, tinyLlama4(), interop::demoEvalTokens(300), 0, controls, 1e-3);
}

// The long context: from position 8192 on, layers 0-2 see only the keys of their own chunk, and layer 3's
// queries are scaled by ln(2) * 0.1 + 1 (floor((p + 1) / 8192) = 1 from position 8191); Scout's llama3 scaling
// slows the frequencies whose wavelength exceeds 8192 positions, which turn far there.
TEST_F(Llama4Interop, Llama4ChunksAndTunesTheTemperatureAsLlamaCppBeyond8192Tokens) {
    const std::vector<model::TokenId> text = interop::demoEvalTokens(300);
    std::vector<model::TokenId> tokens;
    while (tokens.size() < 8448) tokens.push_back(text[tokens.size() % text.size()]);
    const std::vector<Control> controls{
        {"chunked attention", [](model::ModelConfig& c) { c.llama4.chunkSize = 0; }},
        {"temperature tuning", [](model::ModelConfig& c) { c.llama4.temperatureTuning = false; }},
        {"llama3 RoPE scaling", [](model::ModelConfig& c) { c.ropeScaling = model::RopeScaling{}; }},
    };
    expectRunsAsInLlamaCpp(dir_, tinyLlama4(), tokens, 8192, controls, 5e-5);
}
