// The families of 2026 (GLM-4.5, DeepSeek-V3 and Kimi-K2 so far) as llama.cpp runs them: each tiny checkpoint of
// scripts/make-tiny-moe.py, exported as F32 GGUF, gives llama.cpp's next-token distributions within mean
// KL 1e-5 of our forward pass on the Hugging Face checkpoint, and a negative control per feature (our
// forward pass without it) moves far away, so that each feature is seen to be both implemented and used.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "qs/io/checkpoint.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/transformer.h"

#include "interop_test_support.h"
#include "llama_judge.h"
#include "tiny_judge.h"

using namespace qs;

namespace {

namespace fs = std::filesystem;
using interop::Control;
using interop::klWith;

class FamilyInterop : public interop::JudgedTest {};

// RoPE that rotates nothing (every angle divided by 1e30): the decoupled rotary head without its rotation.
void rotateNothing(model::ModelConfig& c) {
    c.ropeScaling = model::RopeScaling{};
    c.ropeScaling.type = model::RopeScalingType::Linear;
    c.ropeScaling.factor = 1e30;
}

// The checkpoint as llama.cpp runs it, then each negative control at least `jump` away.
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

}  // namespace

// GLM-4.5 (glm4-moe-tiny) as llama.cpp's glm4moe runs it: a dense first layer, then sigmoid routing with
// the correction bias in the choice only, two groups of four experts of which one is kept, the weights
// renormalised and scaled by 2.5, a shared expert, q/k/v biases, q/k norms and half of each head rotated.
// llama.cpp masks the dropped groups with -inf where transformers uses 0: the checkpoint's positive
// biases keep every choice positive, where the two agree (test_moe_routing covers where they differ).
TEST_F(FamilyInterop, Glm4MoeRunsInLlamaCppAsTheCheckpointRunsInQuantScope) {
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / "moe" / "glm4-moe-tiny";
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(source));
    ASSERT_EQ(config.moe.scoring, model::RouterScoring::SigmoidGrouped);
    ASSERT_EQ(config.moe.firstDenseLayers, 1);
    ASSERT_EQ(config.moe.numGroups, 2);
    ASSERT_EQ(config.rotaryDims(), 8);
    const std::vector<Control> controls{
        {"the correction bias", {}, [](model::LayerWeights& w) { w.routerScoreBias.resize(0); }},
        {"the group limit", [](model::ModelConfig& c) { c.moe.numGroups = c.moe.topkGroups = 1; }},
        {"the routed scaling", [](model::ModelConfig& c) { c.moe.routedScalingFactor = 1.0; }},
        {"renormalised weights", [](model::ModelConfig& c) { c.moe.normTopkProb = false; }},
        {"the shared expert", {}, [](model::LayerWeights& w) { w.moeNames.shared.clear(); }},
        {"partial RoPE", [](model::ModelConfig& c) { c.rotaryDim = 0; }},
        {"the q/k norms", {}, [](model::LayerWeights& w) { w.qNorm.resize(0), w.kNorm.resize(0); }},
        {"the q/k/v biases", {}, [](model::LayerWeights& w) { w.q.bias.resize(0), w.k.bias.resize(0); }},
    };
    expectRunsAsInLlamaCpp(dir_, source, controls, 1e-3);
}

// DeepSeek-V3 (deepseek-v3-tiny) as llama.cpp's deepseek2 runs it: multi-head latent attention with q through
// q_a_proj / q_a_layernorm / q_b_proj, the keys and values through kv_a_proj_with_mqa / kv_a_layernorm /
// kv_b_proj (written split and transposed as attn_k_b / attn_v_b), values narrower than the queries, the
// rotary parts interleaved, YaRN whose mscale_all_dim scales the scores, then GLM's routing (a dense first
// layer, four expert groups of which two are kept, a shared expert). Each control drops one of them.
TEST_F(FamilyInterop, DeepseekV3RunsInLlamaCppAsTheCheckpointRunsInQuantScope) {
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / "moe" / "deepseek-v3-tiny";
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(source));
    ASSERT_EQ(config.attentionLayout(), model::AttentionLayout::LatentLowRankQuery);
    ASSERT_NE(config.mla.vHeadDim, config.mla.qkHeadDim());
    ASSERT_EQ(config.ropeScaling.type, model::RopeScalingType::Yarn);
    ASSERT_NEAR(config.mla.scoreFactor, std::pow(0.1 * std::log(8.0) + 1.0, 2), 1e-12);
    ASSERT_EQ(config.moe.numGroups, 4);
    ASSERT_EQ(config.moe.firstDenseLayers, 1);
    const std::vector<Control> controls{
        {"the rope interleave", [](model::ModelConfig& c) { c.mla.ropeInterleave = false; }},
        {"YaRN's mscale", [](model::ModelConfig& c) { c.mla.scoreFactor = 1.0; }},
        {"the kv_a_layernorm", {}, [](model::LayerWeights& w) { w.kvANorm.resize(0); }},
        {"the q_a_layernorm", {}, [](model::LayerWeights& w) { w.qANorm.resize(0); }},
        {"the decoupled RoPE", rotateNothing},
        {"the shared expert", {}, [](model::LayerWeights& w) { w.moeNames.shared.clear(); }},
        {"the group limit", [](model::ModelConfig& c) { c.moe.numGroups = c.moe.topkGroups = 1; }},
        {"the correction bias", {}, [](model::LayerWeights& w) { w.routerScoreBias.resize(0); }},
    };
    expectRunsAsInLlamaCpp(dir_, source, controls, 1e-3);
}

// Kimi-K2's model_type (kimi-k2-tiny) as the same deepseek2: q_proj (q_lora_rank null, written as 0), one
// expert group, no RoPE scaling.
TEST_F(FamilyInterop, KimiK2RunsInLlamaCppAsTheCheckpointRunsInQuantScope) {
    const fs::path source = fs::path(QS_TEST_DATA_DIR) / "moe" / "kimi-k2-tiny";
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(source));
    ASSERT_EQ(config.modelType, "kimi_k2");
    ASSERT_EQ(config.attentionLayout(), model::AttentionLayout::Latent);
    const std::vector<Control> controls{
        {"the rope interleave", [](model::ModelConfig& c) { c.mla.ropeInterleave = false; }},
        {"the kv_a_layernorm", {}, [](model::LayerWeights& w) { w.kvANorm.resize(0); }},
        {"the decoupled RoPE", rotateNothing},
        {"the shared expert", {}, [](model::LayerWeights& w) { w.moeNames.shared.clear(); }},
    };
    expectRunsAsInLlamaCpp(dir_, source, controls, 1e-3);
}
