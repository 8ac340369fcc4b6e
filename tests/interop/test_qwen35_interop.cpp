// Qwen3.5 (dense and MoE, and the vision-language checkpoint's text tower) as llama.cpp's qwen35 / qwen35moe
// runs it: each tiny checkpoint of scripts/make-tiny-qwen35.py, exported as F32 GGUF by our writer (A_log as
// -exp(A_log), conv1d squeezed, (1 + w) norms, value heads tiled), gives llama.cpp's next-token distributions
// within mean KL 1e-5 of our forward pass on the Hugging Face checkpoint, and a negative control per feature
// (our forward pass without it) moves far away. (The helpers are test_families_interop.cpp's, repeated here
// so that the two families' tests stay in files of their own.)
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include "qs/io/checkpoint.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/tokenizer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/gguf_result_export.h"
#include "qs/pipeline/job.h"

#include "interop_test_support.h"
#include "llama_judge.h"
#include "tiny_judge.h"

using namespace qs;

namespace {

namespace fs = std::filesystem;
using interop::Control;
using interop::klWith;

class Qwen35Interop : public interop::JudgedTest {};

void expectRunsAsInLlamaCpp(const fs::path& dir, const fs::path& source, const std::vector<Control>& controls,
                            double jump) {
    const std::vector<model::TokenId> tokens = interop::demoEvalTokens(300);
    const nlohmann::json answer = interop::llamaCppOnF32Export(source, dir, tokens);
    EXPECT_EQ(interop::missingKeyWarnings(answer), std::vector<std::string>{});
    for (const auto& w : answer.at("warnings")) std::printf("llama.cpp warning: %s\n", w.get<std::string>().c_str());
    const nlohmann::json& theirs = answer.at("distributions").at(0);
    const io::Checkpoint checkpoint = io::Checkpoint::open(source);
    EXPECT_LT(klWith(theirs, checkpoint, tokens, {"(as it is)"}), 1e-5);
    for (const Control& control : controls)
        EXPECT_GT(klWith(theirs, checkpoint, tokens, control), jump) << "without " << control.feature;
}

// What every Qwen3.5 layer has: the DeltaNet's parts in the linear layers, the gated attention's in the full ones.
std::vector<Control> hybridControls() {
    return {
        {"the causal conv1d", {}, [](model::LayerWeights& w) { w.deltaNet.conv.resize(0, 0); }},
        {"the decay (A_log)",
         {},
         [](model::LayerWeights& w) { w.deltaNet.aLog.setConstant(-std::numeric_limits<float>::infinity()); }},
        {"dt_bias", {}, [](model::LayerWeights& w) { w.deltaNet.dtBias.setZero(); }},
        {"beta (in_proj_b)", {}, [](model::LayerWeights& w) { w.deltaNet.inProjB.weight.setZero(); }},
        {"the gated norm's z", {}, [](model::LayerWeights& w) { w.deltaNet.inProjZ.weight.resize(0, 0); }},
        {"the attention's output gate", [](model::ModelConfig& c) { c.attentionOutputGate = false; }},
        {"partial RoPE", [](model::ModelConfig& c) { c.rotaryDim = 0; }},
        {"the (1 + w) norms", [](model::ModelConfig& c) { c.arch.normOffset = 0.0f; }},
        {"the q/k norms", {}, [](model::LayerWeights& w) { w.qNorm.resize(0), w.kNorm.resize(0); }},
    };
}

}  // namespace

// qwen35-tiny: two Gated DeltaNet layers (2 key heads, 4 value heads: llama.cpp's converter tiles the value
// heads, ours too) and two gated full-attention layers.
TEST_F(Qwen35Interop, DenseRunsInLlamaCppAsTheCheckpointRunsInQuantScope) {
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / "qwen35" / "qwen35-tiny";
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(source));
    ASSERT_TRUE(config.isLinearAttentionLayer(0));
    ASSERT_FALSE(config.isLinearAttentionLayer(1));
    ASSERT_EQ(config.rotaryDims(), 8);
    expectRunsAsInLlamaCpp(dir_, source, hybridControls(), 1e-3);
}

// The vision-language checkpoint's text tower (model.language_model.) is qwen35-tiny's: the same distributions.
TEST_F(Qwen35Interop, VisionLanguageTextTowerRunsInLlamaCpp) {
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / "qwen35" / "qwen35-vl-tiny";
    expectRunsAsInLlamaCpp(dir_, source, {}, 1e-3);
}

// qwen35-moe-tiny: the same hybrid layers with a softmax-routed MoE (fused experts) and a gated shared expert.
TEST_F(Qwen35Interop, MoeRunsInLlamaCppAsTheCheckpointRunsInQuantScope) {
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / "qwen35" / "qwen35-moe-tiny";
    std::vector<Control> controls = hybridControls();
    controls.push_back(
        {"the shared expert's gate", {}, [](model::LayerWeights& w) { w.sharedExpertGate.weight.resize(0, 0); }});
    controls.push_back({"the shared expert", {}, [](model::LayerWeights& w) { w.moeNames.shared.clear(); }});
    controls.push_back({"renormalised weights", [](model::ModelConfig& c) { c.moe.normTopkProb = false; }});
    expectRunsAsInLlamaCpp(dir_, source, controls, 1e-3);
}

// The Job's Q8_0 of qwen35-tiny, written with the value heads tiled in its blocks (in_proj_qkv's value rows,
// in_proj_z, out_proj's columns): llama.cpp runs the file as the Job's model (the original with the Job's
// effective weights) up to llama.cpp's own Q8_0 arithmetic (it quantizes each matmul's activations to Q8_0 as
// well, which dominates here: seen 0.0086, against 0.012 from the original). A value head out of place would
// move whole heads' outputs, as the F32 controls above do (KL 0.1-6).
TEST_F(Qwen35Interop, TheJobsQ8_0GgufRunsInLlamaCppAsTheJobsModel) {
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / "qwen35" / "qwen35-tiny";
    pipeline::JobPlan plan;
    plan.checkpoint = source;
    plan.methods = {pipeline::parseMethod("q8_0")};
    plan.calibration =
        pipeline::tokenWindows(model::Tokenizer::fromFile(source),
                               pipeline::loadTexts(interop::kDemo / "calibration.txt"), 8, 64, "calibration.txt");
    const pipeline::JobResult result = pipeline::Job(plan).run({}, CancelToken{});
    const pipeline::MethodResult& q8 = result.methods.front();
    ASSERT_TRUE(q8.error.empty()) << q8.error;
    const fs::path file =
        pipeline::writeGgufResult(io::Checkpoint::open(source), q8, dir_ / "q8_0.gguf", {}, {}, CancelToken{});
    const std::vector<model::TokenId> tokens = interop::demoEvalTokens(300);
    const nlohmann::json answer =
        interop::runLlamaJudge({{"model", file.string()}, {"evaluate", {tokens}}, {"vocabulary", 320}, {"threads", 2}});
    EXPECT_EQ(interop::missingKeyWarnings(answer), std::vector<std::string>{});
    const nlohmann::json& theirs = answer.at("distributions").at(0);
    model::Transformer job = model::Transformer::fromCheckpoint(io::Checkpoint::open(source));
    for (std::size_t i = 0; i < q8.layers.size(); ++i)
        for (const auto& [module, q] : q8.layers[i])
            job.overrideLinear(static_cast<int>(i), module, [q] { return q->effectiveWeight(); });
    const interop::KlFigures k = interop::compareDistributions(theirs, job.forward(tokens));
    const interop::KlFigures original = interop::compareDistributions(
        theirs, model::Transformer::fromCheckpoint(io::Checkpoint::open(source)).forward(tokens));
    std::printf("q8_0: mean KL(llama.cpp || the Job's model) = %.3g (max %.3g); || the original = %.3g\n", k.mean,
                k.max, original.mean);
    EXPECT_LT(k.mean, 0.05);
    EXPECT_LT(k.mean, original.mean);
}
