// Llama 4's departures from Llama (ModelConfig::Llama4Attention, the SigmoidScalesInput router, the fused
// experts stored x @ W): the chunked attention against a brute-force reference (attention computed naively with
// the chunk mask, small chunks across the 64-query blocks and behind a KV cache), Llama4TextConfig's keys and
// defaults, the router, and the fused checkpoint read as its per-expert twin bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/attention.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/model_config.h"
#include "qs/model/moe_routing.h"
#include "qs/model/transformer.h"

using namespace qs;
using namespace qs::model;

namespace {

namespace fs = std::filesystem;

MatrixF randomMatrix(Eigen::Index rows, Eigen::Index cols, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    MatrixF m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
}

// Attention as the definition says it, in double: query i (position offset + i) of head h reads key j of its KV
// head when j <= offset + i and j / chunk == (offset + i) / chunk.
MatrixF bruteForce(const MatrixF& q, const MatrixF& k, const MatrixF& v, int heads, int kvHeads, int d, int chunk) {
    const Eigen::Index offset = k.rows() - q.rows();
    MatrixF out = MatrixF::Zero(q.rows(), q.cols());
    for (Eigen::Index i = 0; i < q.rows(); ++i) {
        const Eigen::Index pos = offset + i;
        for (int h = 0; h < heads; ++h) {
            const int g = h / (heads / kvHeads);
            std::vector<double> scores;
            std::vector<Eigen::Index> keys;
            for (Eigen::Index j = 0; j <= pos; ++j) {
                if (chunk > 0 && j / chunk != pos / chunk) continue;
                double s = 0.0;
                for (int x = 0; x < d; ++x) s += double(q(i, h * d + x)) * double(k(j, g * d + x));
                scores.push_back(s / std::sqrt(double(d)));
                keys.push_back(j);
            }
            double top = scores[0], sum = 0.0;
            for (double s : scores) top = std::max(top, s);
            for (double& s : scores) sum += s = std::exp(s - top);
            for (int x = 0; x < d; ++x) {
                double acc = 0.0;
                for (std::size_t n = 0; n < keys.size(); ++n) acc += scores[n] / sum * double(v(keys[n], g * d + x));
                out(i, h * d + x) = static_cast<float>(acc);
            }
        }
    }
    return out;
}

}  // namespace

// Small chunks, unaligned to the 64-query blocks causalAttention works in, with and without a KV cache in front.
TEST(Llama4Attention, ChunkedAttentionIsTheBruteForceChunkMask) {
    const int heads = 4, kvHeads = 2, d = 8;
    for (const int chunk : {1, 3, 7, 50, 64, 100, 1000}) {
        for (const Eigen::Index cached : {0, 37}) {
            const Eigen::Index keys = 150, queries = keys - cached;
            const MatrixF q = randomMatrix(queries, heads * d, 11 + chunk);
            const MatrixF k = randomMatrix(keys, kvHeads * d, 12 + chunk);
            const MatrixF v = randomMatrix(keys, kvHeads * d, 13 + chunk);
            AttentionShape shape{heads, kvHeads, d};
            shape.chunk = chunk;
            const MatrixF ours = causalAttention(q, k, v, shape);
            const MatrixF reference = bruteForce(q, k, v, heads, kvHeads, d, chunk);
            EXPECT_LT((ours - reference).cwiseAbs().maxCoeff(), 2e-5) << "chunk " << chunk << ", cached " << cached;
        }
    }
}

// The chunk changes what a query sees (so the check above is no test of plain causal attention), and a chunk as
// long as the sequence is plain causal attention, bit for bit.
TEST(Llama4Attention, ChunksChangeTheOutputAndAWholeChunkIsCausalAttention) {
    const MatrixF q = randomMatrix(120, 16, 1), k = randomMatrix(120, 16, 2), v = randomMatrix(120, 16, 3);
    AttentionShape causal{2, 2, 8};
    AttentionShape chunked = causal, whole = causal;
    chunked.chunk = 32;
    whole.chunk = 120;
    const MatrixF plain = causalAttention(q, k, v, causal);
    EXPECT_GT((causalAttention(q, k, v, chunked) - plain).cwiseAbs().maxCoeff(), 1e-2);
    EXPECT_EQ(causalAttention(q, k, v, whole), plain);
    // The first chunk sees what causal attention sees.
    EXPECT_EQ(causalAttention(q, k, v, chunked).topRows(32), plain.topRows(32));
}

TEST(Llama4Routing, TopKLogitsChooseAndTheirSigmoidIsTheWeight) {
    MoeConfig m;
    m.numExperts = 4;
    m.numExpertsPerToken = 2;
    m.scoring = RouterScoring::SigmoidScalesInput;
    MatrixF logits(2, 4);
    logits << -1.0f, 2.0f, 0.5f, -3.0f,  //
        0.25f, -0.5f, -2.0f, 1.5f;
    const ExpertRouting r = routeTokens(logits, m, VectorF());
    const auto sigmoid = [](float x) { return 1.0f / (1.0f + std::exp(-x)); };
    EXPECT_EQ(r.tokens[1], (std::vector<Eigen::Index>{0}));
    EXPECT_EQ(r.tokens[2], (std::vector<Eigen::Index>{0}));
    EXPECT_EQ(r.tokens[0], (std::vector<Eigen::Index>{1}));
    EXPECT_EQ(r.tokens[3], (std::vector<Eigen::Index>{1}));
    EXPECT_FLOAT_EQ(r.weights[1][0], sigmoid(2.0f));
    EXPECT_FLOAT_EQ(r.weights[2][0], sigmoid(0.5f));
    EXPECT_FLOAT_EQ(r.weights[0][0], sigmoid(0.25f));
    EXPECT_FLOAT_EQ(r.weights[3][0], sigmoid(1.5f));  // not renormalised: the two weights sum past 1
}

namespace {

nlohmann::json textConfig() {
    return {{"model_type", "llama4_text"}, {"hidden_size", 64},       {"intermediate_size", 32},
            {"intermediate_size_mlp", 96}, {"num_hidden_layers", 8},  {"num_attention_heads", 4},
            {"num_key_value_heads", 2},    {"head_dim", 16},          {"vocab_size", 100},
            {"num_local_experts", 16},     {"num_experts_per_tok", 1}};
}

}  // namespace

// Llama4TextConfig's defaults: NoPE every 4th layer, RoPE layers chunked by 8192, MoE in every layer, the L2 norm
// and temperature tuning on, rms_norm_eps 1e-5, rope_theta 500000; the dense MLP intermediate_size_mlp wide and
// the experts and the shared expert intermediate_size.
TEST(Llama4Config, DefaultsAreLlama4TextConfigs) {
    const ModelConfig c = ModelConfig::fromJson(textConfig());
    ASSERT_TRUE(c.llama4.active());
    EXPECT_EQ(c.llama4.rope, (std::vector<bool>{true, true, true, false, true, true, true, false}));
    EXPECT_EQ(c.llama4.chunked, c.llama4.rope);
    EXPECT_EQ(c.llama4.chunkSize, 8192);
    EXPECT_TRUE(c.llama4.l2QkNorm);
    EXPECT_TRUE(c.llama4.temperatureTuning);
    EXPECT_EQ(c.llama4.floorScale, 8192.0);
    EXPECT_EQ(c.llama4.attnScale, 0.1);
    EXPECT_EQ(c.rmsNormEps, 1e-5);
    EXPECT_EQ(c.ropeTheta, 500000.0);
    for (int layer = 0; layer < 8; ++layer) EXPECT_TRUE(c.isMoeLayer(layer));
    EXPECT_EQ(c.intermediateSize, 96);
    EXPECT_EQ(c.moe.expertIntermediateSize, 32);
    EXPECT_EQ(c.moe.sharedExpertIntermediateSize, 32);
    EXPECT_EQ(c.moe.scoring, RouterScoring::SigmoidScalesInput);
    EXPECT_EQ(c.moe.names.router(), "feed_forward.router");
    EXPECT_EQ(c.moe.names.sharedExpert(), "feed_forward.shared_expert.");
}

TEST(Llama4Config, InterleavedMoeLayersNoRopeLayersChunkAndKeysAreRead) {
    nlohmann::json j = textConfig();
    j["interleave_moe_layer_step"] = 2;
    j["no_rope_layers"] = {1, 0, 1, 1, 1, 0, 1, 1};
    j["attention_chunk_size"] = nullptr;
    j["use_qk_norm"] = false;
    j["attn_temperature_tuning"] = false;
    j["floor_scale"] = 64;
    j["attn_scale"] = 0.5;
    ModelConfig c = ModelConfig::fromJson(j);
    for (int layer = 0; layer < 8; ++layer) EXPECT_EQ(c.isMoeLayer(layer), layer % 2 == 1) << layer;
    EXPECT_EQ(c.llama4.rope, (std::vector<bool>{true, false, true, true, true, false, true, true}));
    EXPECT_EQ(c.llama4.chunked, c.llama4.rope);
    EXPECT_EQ(c.llama4.chunkSize, 0);
    EXPECT_FALSE(c.llama4.l2QkNorm);
    EXPECT_FALSE(c.llama4.temperatureTuning);
    EXPECT_EQ(c.llama4.floorScale, 64.0);
    EXPECT_EQ(c.llama4.attnScale, 0.5);
    // moe_layers, when given, is the list (whatever the step says); layer_types the attention of each layer.
    j["moe_layers"] = {0, 5};
    j["layer_types"] = {"full_attention",    "full_attention",    "chunked_attention", "full_attention",
                        "chunked_attention", "chunked_attention", "full_attention",    "full_attention"};
    j["attention_chunk_size"] = 16;
    c = ModelConfig::fromJson(j);
    for (int layer = 0; layer < 8; ++layer) EXPECT_EQ(c.isMoeLayer(layer), layer == 0 || layer == 5) << layer;
    EXPECT_EQ(c.llama4.chunked, (std::vector<bool>{false, false, true, false, true, true, false, false}));
    EXPECT_EQ(c.llama4.chunkSize, 16);
    j["no_rope_layers"] = {1, 0, 1};
    EXPECT_THROW(ModelConfig::fromJson(j), Error);  // shorter than the layers
}

// Llama-4-Scout-17B-16E's text_config as the Hub ships it (attn_temperature_tuning written as 4, the lists spelled
// out, llama3 scaling), and Maverick's shape (a MoE block every second layer, 128 experts, no q/k norm).
TEST(Llama4Config, TheReleasesConfigsAreRead) {
    nlohmann::json rope = nlohmann::json::array(), moe = nlohmann::json::array();
    for (int i = 0; i < 48; ++i) rope.push_back((i + 1) % 4 != 0 ? 1 : 0), moe.push_back(i);
    nlohmann::json scout = {{"attention_bias", false},
                            {"attention_chunk_size", 8192},
                            {"attention_dropout", 0.0},
                            {"attn_scale", 0.1},
                            {"attn_temperature_tuning", 4},
                            {"bos_token_id", 200000},
                            {"eos_token_id", {200001, 200007, 200008}},
                            {"floor_scale", 8192},
                            {"for_llm_compressor", false},
                            {"head_dim", 128},
                            {"hidden_act", "silu"},
                            {"hidden_size", 5120},
                            {"interleave_moe_layer_step", 1},
                            {"intermediate_size", 8192},
                            {"intermediate_size_mlp", 16384},
                            {"max_position_embeddings", 262144},
                            {"model_type", "llama4_text"},
                            {"moe_layers", moe},
                            {"no_rope_layers", rope},
                            {"num_attention_heads", 40},
                            {"num_experts_per_tok", 1},
                            {"num_hidden_layers", 48},
                            {"num_key_value_heads", 8},
                            {"num_local_experts", 16},
                            {"pad_token_id", 200018},
                            {"rms_norm_eps", 1e-05},
                            {"rope_scaling",
                             {{"factor", 8.0},
                              {"high_freq_factor", 4.0},
                              {"low_freq_factor", 1.0},
                              {"original_max_position_embeddings", 8192},
                              {"rope_type", "llama3"}}},
                            {"rope_theta", 500000.0},
                            {"torch_dtype", "bfloat16"},
                            {"use_qk_norm", true},
                            {"vocab_size", 202048}};
    const nlohmann::json vlm = {{"architectures", {"Llama4ForConditionalGeneration"}},
                                {"model_type", "llama4"},
                                {"text_config", scout},
                                {"tie_word_embeddings", false}};
    ModelConfig c = ModelConfig::fromJson(vlm);
    EXPECT_TRUE(c.llama4.temperatureTuning);
    EXPECT_TRUE(c.llama4.l2QkNorm);
    EXPECT_EQ(c.llama4.chunkSize, 8192);
    EXPECT_EQ(c.moe.numExperts, 16);
    EXPECT_EQ(c.moe.sharedExpertIntermediateSize, 8192);
    EXPECT_EQ(c.intermediateSize, 16384);
    for (int layer = 0; layer < 48; ++layer) EXPECT_TRUE(c.isMoeLayer(layer));
    EXPECT_FALSE(c.llama4.rope[47]);
    // Maverick: MoE every second layer (the others dense, intermediate_size_mlp), 128 experts, use_qk_norm false.
    scout["interleave_moe_layer_step"] = 2;
    scout["moe_layers"] = nlohmann::json::array();
    for (int i = 1; i < 48; i += 2) scout["moe_layers"].push_back(i);
    scout["num_local_experts"] = 128;
    scout["use_qk_norm"] = false;
    scout["attn_temperature_tuning"] = 0;
    c = ModelConfig::fromJson(scout);
    for (int layer = 0; layer < 48; ++layer) EXPECT_EQ(c.isMoeLayer(layer), layer % 2 == 1) << layer;
    EXPECT_FALSE(c.llama4.l2QkNorm);
    EXPECT_FALSE(c.llama4.temperatureTuning);
    EXPECT_EQ(c.moe.numExperts, 128);
}

// Llama4ForConditionalGeneration: text_config read as llama4_text, the text tower under language_model.model.
TEST(Llama4Config, TheVisionLanguageModelsTextTowerIsLlama4Text) {
    const nlohmann::json j = {{"model_type", "llama4"}, {"text_config", textConfig()}, {"vision_config", {}}};
    const ModelConfig c = ModelConfig::fromJson(j);
    EXPECT_EQ(c.modelType, "llama4");
    EXPECT_TRUE(c.llama4.active());
    EXPECT_EQ(c.arch.tensorPrefix, "language_model.model.");
    EXPECT_EQ(c.arch.lmHead, "language_model.lm_head.weight");
    EXPECT_EQ(c.arch.passThroughPrefixes, (std::vector<std::string>{"vision_model.", "multi_modal_projector."}));
}

// The fused experts (gate_up_proj [E, H, 2I], down_proj [E, I, H], x @ W) read as per-expert tensors hold the
// per-expert checkpoint's values bit for bit, the dense feed_forward MLP is read as mlp.*, and the two
// checkpoints' forward passes agree bit for bit.
TEST(Llama4Checkpoint, FusedExpertsReadAsThePerExpertTwinBitForBit) {
    const fs::path data = fs::path(QS_TEST_DATA_DIR) / "moe";
    const io::Checkpoint fused = io::Checkpoint::open(data / "llama4-tiny");
    const io::Checkpoint perExpert = io::Checkpoint::open(data / "llama4-tiny-per-expert");
    EXPECT_EQ(fused.find("model.layers.1.feed_forward.experts.gate_up_proj"), nullptr);
    EXPECT_EQ(fused.find("model.layers.0.feed_forward.gate_proj.weight"), nullptr);
    EXPECT_NE(fused.find("model.layers.0.mlp.gate_proj.weight"), nullptr);
    EXPECT_EQ(fused.denseMlpBlock(), "feed_forward");
    ASSERT_EQ(fused.tensors().size(), perExpert.tensors().size());
    for (const io::CheckpointTensor& t : perExpert.tensors()) {
        const io::CheckpointTensor* twin = fused.find(t.info->name);
        ASSERT_NE(twin, nullptr) << t.info->name;
        EXPECT_EQ(twin->info->shape, t.info->shape) << t.info->name;
        EXPECT_EQ(fused.view(*twin).toF32(), perExpert.view(t).toF32()) << t.info->name;
    }
    const std::vector<TokenId> tokens{1, 17, 42, 99, 256, 3, 7, 300, 12, 5};
    const auto logits = [&](const io::Checkpoint& c) {
        const ModelConfig config = ModelConfig::fromCheckpoint(c);
        Transformer t(config, std::make_shared<const CheckpointWeights>(c, config));
        return t.forward(tokens);
    };
    EXPECT_EQ(logits(fused), logits(perExpert));
}
