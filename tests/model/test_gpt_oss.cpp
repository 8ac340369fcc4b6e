// gpt-oss's pieces against brute-force references written here from transformers' definitions
// (modeling_gpt_oss.py, modeling_rope_utils.py): attention sinks, the clamped SwiGLU, YaRN with and
// without truncate, and the config of the tiny checkpoint (scripts/make-tiny-gptoss.py). The whole
// forward pass is judged against llama.cpp in tests/interop (Interop.GptOss...).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numbers>
#include <random>
#include <vector>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/attention.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/expert_activation.h"
#include "qs/model/model_config.h"
#include "qs/model/rope.h"
#include "qs/model/transformer.h"

using namespace qs;
using namespace qs::model;

namespace {

const std::filesystem::path kTiny = std::filesystem::path(QS_TEST_DATA_DIR) / "gptoss" / "gptoss-tiny";

MatrixF randomMatrix(Eigen::Index rows, Eigen::Index cols, std::mt19937& rng, float sd) {
    std::normal_distribution<float> n(0.0f, sd);
    MatrixF m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
    return m;
}

// transformers' eager attention with sinks, in double: the sink is one more column of the scores (the
// mask leaves it visible), the softmax runs over all columns, and the sink's column is dropped.
MatrixF attentionWithSinksReference(const MatrixF& q, const MatrixF& k, const MatrixF& v, int heads, int kvHeads, int d,
                                    int window, const std::vector<float>& sinks) {
    const Eigen::Index tq = q.rows(), tk = k.rows(), offset = tk - tq;
    MatrixF out = MatrixF::Zero(tq, q.cols());
    for (int h = 0; h < heads; ++h) {
        const int kvh = h / (heads / kvHeads);
        for (Eigen::Index i = 0; i < tq; ++i) {
            const Eigen::Index pos = offset + i;
            std::vector<double> logits;
            std::vector<Eigen::Index> keys;
            for (Eigen::Index j = 0; j <= pos; ++j) {
                if (window > 0 && pos - j >= window) continue;
                double dot = 0.0;
                for (int x = 0; x < d; ++x) dot += double(q(i, h * d + x)) * double(k(j, kvh * d + x));
                logits.push_back(dot / std::sqrt(double(d)));
                keys.push_back(j);
            }
            logits.push_back(sinks[static_cast<std::size_t>(h)]);
            double top = -1e300, sum = 0.0;
            for (double l : logits) top = std::max(top, l);
            for (double l : logits) sum += std::exp(l - top);
            for (std::size_t n = 0; n < keys.size(); ++n) {
                const double p = std::exp(logits[n] - top) / sum;
                for (int x = 0; x < d; ++x) out(i, h * d + x) += static_cast<float>(p * v(keys[n], kvh * d + x));
            }
        }
    }
    return out;
}

}  // namespace

TEST(GptOssAttention, SinksJoinTheSoftmaxDenominatorAsTransformersConcatenatesThem) {
    std::mt19937 rng(7);
    const int heads = 4, kvHeads = 2, d = 8;
    // Sinks from far below to far above the scores: a large sink takes most of the weight.
    const std::vector<float> sinks{-3.0f, 0.0f, 1.5f, 6.0f};
    for (const auto& [tq, tk, window] : {std::tuple{12, 12, 0}, std::tuple{12, 12, 5}, std::tuple{4, 15, 6}}) {
        SCOPED_TRACE("queries " + std::to_string(tq) + " keys " + std::to_string(tk) + " window " +
                     std::to_string(window));
        const MatrixF q = randomMatrix(tq, heads * d, rng, 1.5f), k = randomMatrix(tk, kvHeads * d, rng, 1.5f),
                      v = randomMatrix(tk, kvHeads * d, rng, 1.0f);
        const AttentionShape shape{heads, kvHeads, d, window, sinks.data()};
        const MatrixF ours = causalAttention(q, k, v, shape);
        const MatrixF reference = attentionWithSinksReference(q, k, v, heads, kvHeads, d, window, sinks);
        EXPECT_LT((ours - reference).cwiseAbs().maxCoeff(), 2e-6f);
        // Without the sinks the rows are convex combinations of the values again: the sinks changed them.
        const MatrixF plain = causalAttention(q, k, v, AttentionShape{heads, kvHeads, d, window});
        EXPECT_GT((ours - plain).cwiseAbs().maxCoeff(), 0.05f);
    }
}

TEST(GptOssExperts, ClampedSwigluIsTransformersGptOssExperts) {
    std::mt19937 rng(11);
    const MatrixF gateUp = randomMatrix(9, 2 * 16, rng, 6.0f);  // sd 6: many values beyond the limit 7
    const float limit = 7.0f, alpha = 1.702f;
    const MatrixF ours = clampedSwiglu(gateUp, limit, alpha);
    ASSERT_EQ(ours.rows(), 9);
    ASSERT_EQ(ours.cols(), 16);
    int clampedGates = 0, clampedUps = 0;
    for (Eigen::Index t = 0; t < gateUp.rows(); ++t)
        for (Eigen::Index i = 0; i < 16; ++i) {
            // gate = gate_up[..., ::2], up = gate_up[..., 1::2]
            double gate = gateUp(t, 2 * i), up = gateUp(t, 2 * i + 1);
            clampedGates += gate > limit;
            clampedUps += std::abs(up) > limit;
            gate = std::min(gate, double(limit));
            up = std::max(std::min(up, double(limit)), -double(limit));
            const double glu = gate / (1.0 + std::exp(-gate * alpha));
            const double expected = (up + 1.0) * glu;
            EXPECT_NEAR(ours(t, i), expected, 1e-5 * std::max(1.0, std::abs(expected))) << t << "," << i;
        }
    EXPECT_GT(clampedGates, 5);  // the clamps were exercised, on both halves
    EXPECT_GT(clampedUps, 5);
    EXPECT_THROW(clampedSwiglu(MatrixF::Zero(2, 3), limit, alpha), Error);
}

namespace {

// transformers' _compute_yarn_parameters, in double.
std::vector<double> yarnReference(int dim, double base, double factor, double betaFast, double betaSlow,
                                  int originalContext, bool truncate) {
    const auto correctionDim = [&](double rotations) {
        return dim * std::log(originalContext / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
    };
    double low = correctionDim(betaFast), high = correctionDim(betaSlow);
    if (truncate) low = std::floor(low), high = std::ceil(high);
    low = std::max(low, 0.0);
    high = std::min(high, double(dim - 1));
    std::vector<double> out;
    for (int i = 0; i < dim / 2; ++i) {
        const double posFreq = std::pow(base, double(2 * i) / dim);
        const double ramp = std::min(1.0, std::max(0.0, (i - low) / (high - low)));
        const double extrapolationFactor = 1.0 - ramp;
        out.push_back(1.0 / (factor * posFreq) * (1.0 - extrapolationFactor) + 1.0 / posFreq * extrapolationFactor);
    }
    return out;
}

}  // namespace

TEST(GptOssRope, YarnFollowsTransformersWithAndWithoutTruncate) {
    // gpt-oss's own numbers: head_dim 64, rope_theta 150000, factor 32, original context 4096.
    RopeScaling s;
    s.type = RopeScalingType::Yarn;
    s.factor = 32.0;
    s.originalMaxPositionEmbeddings = 4096;
    s.attentionFactor = 0.1 * std::log(32.0) + 1.0;
    std::vector<std::vector<double>> byTruncate;
    for (const bool truncate : {true, false}) {
        SCOPED_TRACE(truncate ? "truncate" : "no truncate");
        s.truncate = truncate;
        const RotaryEmbedding rope(64, 150000.0, s);
        const auto expected = yarnReference(64, 150000.0, 32.0, 32.0, 1.0, 4096, truncate);
        ASSERT_EQ(rope.inverseFrequencies().size(), expected.size());
        for (std::size_t i = 0; i < expected.size(); ++i)
            EXPECT_NEAR(rope.inverseFrequencies()[i], expected[i], 1e-12 * expected[i]) << i;
        EXPECT_DOUBLE_EQ(rope.attentionFactor(), 0.1 * std::log(32.0) + 1.0);
        byTruncate.push_back(rope.inverseFrequencies());
    }
    // The correction range is [8.09, 17.4] here: rounding it out to [8, 18] moves the ramp's frequencies.
    double largest = 0.0;
    for (std::size_t i = 0; i < byTruncate[0].size(); ++i)
        largest = std::max(largest, std::abs(byTruncate[0][i] - byTruncate[1][i]) / byTruncate[0][i]);
    EXPECT_GT(largest, 1e-3);
    // cos and sin carry the attention factor: at position 0 the rotation is the identity times it.
    const RotaryEmbedding rope(64, 150000.0, s);
    MatrixF x = MatrixF::Ones(1, 128);
    rope.apply(x, 2, 0);
    EXPECT_NEAR(x(0, 5), 0.1 * std::log(32.0) + 1.0, 1e-6);
}

TEST(GptOssConfig, TheTinyCheckpointReadsAsGptOss) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(kTiny);
    const ModelConfig c = ModelConfig::fromCheckpoint(checkpoint);
    EXPECT_EQ(c.modelType, "gpt_oss");
    EXPECT_EQ(c.headDim, 64);
    EXPECT_TRUE(c.qkvBias);
    EXPECT_TRUE(c.outputBias);
    EXPECT_TRUE(c.arch.attentionSinks);
    EXPECT_EQ(c.windowOf(0), 32);
    EXPECT_EQ(c.windowOf(1), 0);
    EXPECT_EQ(c.windowOf(2), 32);
    EXPECT_EQ(c.windowOf(3), 0);
    EXPECT_FALSE(c.usesLocalRope(0));  // one RoPE for every layer
    EXPECT_EQ(c.ropeScaling.type, RopeScalingType::Yarn);
    EXPECT_EQ(c.ropeScaling.originalMaxPositionEmbeddings, 4096);
    EXPECT_TRUE(c.ropeScaling.truncate);
    EXPECT_EQ(c.moe.numExperts, 4);
    EXPECT_EQ(c.moe.numExpertsPerToken, 2);
    EXPECT_EQ(c.moe.expertIntermediateSize, 32);
    EXPECT_EQ(c.moe.activation, ExpertActivation::ClampedSwiglu);
    EXPECT_FLOAT_EQ(c.moe.swigluLimit, 7.0f);
    EXPECT_EQ(c.moe.names.router(), "mlp.router");

    // Each expert is one Linear per projection: gate_up [2I, hidden] (interleaved rows) and down, with biases,
    // transposed from the stacked [E, in, out] tensors.
    const CheckpointWeights weights(checkpoint, c);
    const LayerWeights layer = weights.layer(1);
    ASSERT_EQ(layer.experts.size(), 4u);
    EXPECT_EQ(layer.sinks.size(), 4);
    EXPECT_EQ(layer.router.bias.size(), 4);
    const Expert& e = layer.experts[2];
    EXPECT_EQ(e.gate.weight.rows(), 64);
    EXPECT_EQ(e.gate.weight.cols(), 32);
    EXPECT_EQ(e.gate.bias.size(), 64);
    EXPECT_EQ(e.up.weight.size(), 0);
    EXPECT_EQ(e.down.weight.rows(), 32);
    EXPECT_EQ(e.down.weight.cols(), 32);
    const std::vector<float> stacked = checkpoint.tensor("model.layers.1.mlp.experts.gate_up_proj").toF32();
    // gate_up_proj[2, 5, 7] is input 5's weight in output 7 of expert 2.
    EXPECT_EQ(e.gate.weight(7, 5), stacked[(2 * 32 + 5) * 64 + 7]);
    EXPECT_EQ(layer.linearModules().size(), 4u + 4u * 2u);
    EXPECT_EQ(layer.linearModules()[4], "mlp.experts.0.gate_up_proj");
    EXPECT_EQ(&layer.linear("mlp.experts.3.down_proj"), &layer.experts[3].down);
    EXPECT_EQ(&layer.linear("mlp.router"), &layer.router);
    EXPECT_THROW((void)layer.linear("mlp.experts.3.up_proj"), Error);
}

// YaRN's mscale and mscale_all_dim as _compute_yarn_parameters reads them for every model: alone, mscale
// changes nothing (the attention factor stays 0.1 ln(factor) + 1); with mscale_all_dim the factor is
// get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim). (The softmax's mscale² is DeepSeek's
// attention's own: gpt-oss's scores keep head_dim^-1/2.)
TEST(GptOssConfig, YarnsMscaleKeysAreReadAsTransformersReadsThem) {
    nlohmann::json j = nlohmann::json::parse(R"({"model_type": "gpt_oss", "hidden_size": 32, "intermediate_size": 32,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 320,
        "num_local_experts": 4, "num_experts_per_tok": 2, "max_position_embeddings": 8192,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "mscale": 0.7}})");
    EXPECT_NEAR(ModelConfig::fromJson(j).ropeScaling.attentionFactor, 0.1 * std::log(4.0) + 1.0, 1e-15);
    j["rope_scaling"]["mscale_all_dim"] = 0.9;
    EXPECT_NEAR(ModelConfig::fromJson(j).ropeScaling.attentionFactor,
                (0.07 * std::log(4.0) + 1.0) / (0.09 * std::log(4.0) + 1.0), 1e-15);
    j["rope_scaling"]["mscale"] = -1.0;
    EXPECT_THROW((void)ModelConfig::fromJson(j), Error);
    j["rope_scaling"].erase("mscale");
    j["rope_scaling"].erase("mscale_all_dim");
    const ModelConfig c = ModelConfig::fromJson(j);
    EXPECT_EQ(c.ropeScaling.originalMaxPositionEmbeddings, 8192);  // defaults to max_position_embeddings
    EXPECT_TRUE(c.slidingLayers.at(0));                            // GptOssConfig's default layer_types
    EXPECT_FALSE(c.slidingLayers.at(1));
    EXPECT_EQ(c.slidingWindow, 128);
}
