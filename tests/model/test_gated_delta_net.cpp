// Qwen3.5's Gated DeltaNet (qs/model/gated_delta_net.h): the sequential recurrence against a brute-force
// reference written here from the delta rule's closed form, the state carried between calls giving the same
// bits as one call, the causal conv1d against its definition, the config reader, and generation through the
// KV cache (the layers' recurrent state) against the full forward of the tiny checkpoint.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>
#include <omp.h>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/gated_delta_net.h"
#include "qs/model/kv_cache.h"
#include "qs/model/model_config.h"
#include "qs/model/transformer.h"

using namespace qs;
using namespace qs::model;

namespace {

MatrixF random(std::mt19937& rng, Eigen::Index rows, Eigen::Index cols, float scale) {
    std::normal_distribution<float> n(0.0f, scale);
    MatrixF m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
    return m;
}

struct Inputs {
    MatrixF q, k, v, g, beta;
    int keyHeads = 2, valueHeads = 6, dk = 5, dv = 3;
};

Inputs randomInputs(std::mt19937& rng, int t, Inputs in = {}) {
    in.q = random(rng, t, in.keyHeads * in.dk, 1.0f);
    in.k = random(rng, t, in.keyHeads * in.dk, 1.0f);
    l2NormalizeHeadsInPlace(in.q, in.dk);
    l2NormalizeHeadsInPlace(in.k, in.dk);
    in.q *= 1.0f / std::sqrt(static_cast<float>(in.dk));
    in.v = random(rng, t, in.valueHeads * in.dv, 1.0f);
    std::uniform_real_distribution<float> decay(-1.5f, -0.01f), b(0.05f, 0.95f);
    in.g.resize(t, in.valueHeads);
    in.beta.resize(t, in.valueHeads);
    for (Eigen::Index i = 0; i < in.g.size(); ++i) in.g.data()[i] = decay(rng), in.beta.data()[i] = b(rng);
    return in;
}

// The delta rule's closed form, in double: S_t = Σ_{j<=t} M_t M_(t-1) ... M_(j+1) β_j k_j v_jᵀ with
// M_i = exp(g_i) (I − β_i k_i k_iᵀ), o_t = S_tᵀ q_t; value head h reads key head h / (valueHeads / keyHeads).
MatrixF bruteForce(const Inputs& in) {
    using Md = Eigen::MatrixXd;
    using Vd = Eigen::VectorXd;
    const Eigen::Index t = in.q.rows();
    MatrixF out(t, in.valueHeads * in.dv);
    const int group = in.valueHeads / in.keyHeads;
    for (int h = 0; h < in.valueHeads; ++h) {
        const int kh = h / group;
        const auto key = [&](Eigen::Index i) -> Vd {
            return in.k.row(i).segment(kh * in.dk, in.dk).transpose().cast<double>();
        };
        for (Eigen::Index i = 0; i < t; ++i) {
            Md s = Md::Zero(in.dk, in.dv);
            for (Eigen::Index j = 0; j <= i; ++j) {
                const Vd kj = key(j);
                Md term = double(in.beta(j, h)) * kj * in.v.row(j).segment(h * in.dv, in.dv).cast<double>();
                for (Eigen::Index m = j + 1; m <= i; ++m) {
                    const Vd km = key(m);
                    const Md transition = std::exp(double(in.g(m, h))) *
                                          (Md::Identity(in.dk, in.dk) - double(in.beta(m, h)) * km * km.transpose());
                    term = transition * term;
                }
                s += term;
            }
            const Vd q = in.q.row(i).segment(kh * in.dk, in.dk).transpose().cast<double>();
            out.row(i).segment(h * in.dv, in.dv) = (s.transpose() * q).transpose().cast<float>();
        }
    }
    return out;
}

}  // namespace

TEST(GatedDeltaNet, TheRecurrenceIsTheDeltaRulesClosedForm) {
    std::mt19937 rng(35);
    const Inputs in = randomInputs(rng, 12);
    const MatrixF ours = gatedDeltaRule(in.q, in.k, in.v, in.g, in.beta, in.keyHeads, in.valueHeads);
    const MatrixF reference = bruteForce(in);
    EXPECT_LT((ours - reference).cwiseAbs().maxCoeff(), 1e-5f);
    EXPECT_GT(reference.cwiseAbs().maxCoeff(), 0.1f);  // not all zeros
    // Value heads 0-2 read key head 0 and 3-5 key head 1 (grouped, transformers' repeat_interleave; tiled, as
    // llama.cpp's graph reads them, value head 1 would read key head 1): changing key head 1 moves heads 3-5 only.
    Inputs other = in;
    other.k.rightCols(in.dk).swap(other.q.rightCols(in.dk));
    const MatrixF moved = gatedDeltaRule(other.q, other.k, in.v, in.g, in.beta, in.keyHeads, in.valueHeads);
    EXPECT_EQ(moved.leftCols(3 * in.dv), ours.leftCols(3 * in.dv));
    EXPECT_GT((moved.rightCols(3 * in.dv) - ours.rightCols(3 * in.dv)).cwiseAbs().maxCoeff(), 1e-3f);
}

// Without decay and with β = 1, one token's key written then read back returns its value (the delta rule
// overwrites what a unit key stores).
TEST(GatedDeltaNet, AUnitKeyReadsBackWhatItWrote) {
    MatrixF q(1, 4), k(1, 4), v(1, 2), g = MatrixF::Zero(1, 1), beta = MatrixF::Ones(1, 1);
    k << 0.5f, 0.5f, 0.5f, 0.5f;
    q = k;
    v << 3.0f, -2.0f;
    std::vector<MatrixF> state;
    const MatrixF first = gatedDeltaRule(q, k, v, g, beta, 1, 1, &state);
    EXPECT_NEAR(first(0, 0), 3.0f, 1e-6f);
    EXPECT_NEAR(first(0, 1), -2.0f, 1e-6f);
    v << 1.0f, 1.0f;  // the same key again: the new value replaces the old one
    const MatrixF second = gatedDeltaRule(q, k, v, g, beta, 1, 1, &state);
    EXPECT_NEAR(second(0, 0), 1.0f, 1e-6f);
    EXPECT_NEAR(second(0, 1), 1.0f, 1e-6f);
}

TEST(GatedDeltaNet, AStateCarriedBetweenCallsGivesTheSameBits) {
    std::mt19937 rng(36);
    const Inputs in = randomInputs(rng, 10);
    const MatrixF whole = gatedDeltaRule(in.q, in.k, in.v, in.g, in.beta, in.keyHeads, in.valueHeads);
    std::vector<MatrixF> state;
    MatrixF parts(10, whole.cols());
    for (const auto& [first, count] : std::vector<std::pair<int, int>>{{0, 4}, {4, 1}, {5, 5}})
        parts.middleRows(first, count) = gatedDeltaRule(
            in.q.middleRows(first, count), in.k.middleRows(first, count), in.v.middleRows(first, count),
            in.g.middleRows(first, count), in.beta.middleRows(first, count), in.keyHeads, in.valueHeads, &state);
    EXPECT_EQ(parts, whole);
}

// The value heads run on the OpenMP team, each on one thread in a fixed order: any team gives the same bits.
TEST(GatedDeltaNet, AnyTeamGivesTheSameBits) {
    std::mt19937 rng(38);
    Inputs shape;
    shape.keyHeads = 2, shape.valueHeads = 8, shape.dk = 16, shape.dv = 16;
    const Inputs in = randomInputs(rng, 64, shape);
    const int team = omp_get_max_threads();
    omp_set_num_threads(1);
    const MatrixF one = gatedDeltaRule(in.q, in.k, in.v, in.g, in.beta, in.keyHeads, in.valueHeads);
    omp_set_num_threads(4);
    const MatrixF four = gatedDeltaRule(in.q, in.k, in.v, in.g, in.beta, in.keyHeads, in.valueHeads);
    omp_set_num_threads(team);
    EXPECT_EQ(one, four);
}

TEST(GatedDeltaNet, TheConvIsCausalDepthwiseWithSiluAndItsHistoryCarries) {
    std::mt19937 rng(37);
    const MatrixF x = random(rng, 7, 3, 1.0f), w = random(rng, 3, 4, 0.5f);
    const MatrixF out = causalConvSilu(x, w);
    for (Eigen::Index t = 0; t < 7; ++t)
        for (Eigen::Index c = 0; c < 3; ++c) {
            double sum = 0.0;  // torch's conv1d with padding K - 1, the first T outputs
            for (Eigen::Index j = 0; j < 4; ++j)
                if (t - 3 + j >= 0) sum += double(w(c, j)) * double(x(t - 3 + j, c));
            EXPECT_NEAR(out(t, c), sum / (1.0 + std::exp(-sum)), 1e-5);
        }
    MatrixF history;
    MatrixF parts(7, 3);
    parts.topRows(2) = causalConvSilu(x.topRows(2), w, &history);
    parts.middleRows(2, 1) = causalConvSilu(x.middleRows(2, 1), w, &history);
    parts.bottomRows(4) = causalConvSilu(x.bottomRows(4), w, &history);
    EXPECT_EQ(parts, out);
}

TEST(GatedDeltaNet, TheConfigReadsLayerTypesOrTheInterval) {
    nlohmann::json j = {{"model_type", "qwen3_5_text"},
                        {"hidden_size", 32},
                        {"intermediate_size", 48},
                        {"num_hidden_layers", 8},
                        {"num_attention_heads", 4},
                        {"num_key_value_heads", 2},
                        {"head_dim", 32},
                        {"vocab_size", 320},
                        {"linear_num_key_heads", 2},
                        {"linear_num_value_heads", 4},
                        {"linear_key_head_dim", 8},
                        {"linear_value_head_dim", 8}};
    const ModelConfig c = ModelConfig::fromJson(j);
    for (int l = 0; l < 8; ++l) EXPECT_EQ(c.isLinearAttentionLayer(l), (l + 1) % 4 != 0) << l;  // interval 4
    EXPECT_EQ(c.rotaryDims(), 8);  // partial_rotary_factor's default 0.25
    EXPECT_TRUE(c.attentionOutputGate);
    EXPECT_EQ(c.arch.normOffset, 1.0f);
    EXPECT_EQ(c.linearAttention.convKernel, 4);
    EXPECT_EQ(c.attentionLayout(0), AttentionLayout::GatedDeltaNet);
    EXPECT_EQ(c.attentionLayout(3), AttentionLayout::QueryKeyValue);
    j["linear_num_value_heads"] = 3;
    EXPECT_THROW(ModelConfig::fromJson(j), Error);  // not a multiple of the key heads
    j["linear_num_value_heads"] = 4;
    j["layer_types"] = {"linear_attention", "sliding_attention"};
    EXPECT_THROW(ModelConfig::fromJson(j), Error);
}

// Generation one token at a time carries each linear layer's conv history and state in the cache.
TEST(GatedDeltaNet, KvCacheStepsEqualTheFullForward) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(std::string(QS_TEST_DATA_DIR) + "/qwen35/qwen35-tiny");
    Transformer model = Transformer::fromCheckpoint(checkpoint);
    const std::vector<TokenId> tokens{3, 17, 5, 39, 0, 22, 8, 8, 13, 101, 250};
    const MatrixF full = model.forward(tokens);
    KvCache cache(model.config(), 16);
    const std::span<const TokenId> all(tokens);
    MatrixF rows = model.forward(all.first(3), cache);
    for (std::size_t t = 3; t < tokens.size(); ++t) {
        const MatrixF step = model.forward(all.subspan(t, 1), cache);
        rows.conservativeResize(rows.rows() + 1, Eigen::NoChange);
        rows.bottomRows(1) = step;
    }
    EXPECT_EQ(cache.length(), static_cast<int>(tokens.size()));
    EXPECT_LT((rows - full).cwiseAbs().maxCoeff(), 1e-4f);
}
