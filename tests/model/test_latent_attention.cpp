// DeepSeek-V3's multi-head latent attention against a brute-force double-precision reference written from
// transformers' DeepseekV3Attention: q through q_a_proj / q_a_layernorm / q_b_proj (or q_proj), the latent
// and the shared rotary key from kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj's per-head [k_nope | v],
// RoPE on the rotary parts only (adjacent pairs with rope_interleave, else rotate_half's halves), scores
// scaled by (nope + rope)^-1/2 times YaRN's mscale², values narrower than the queries. Also its config:
// the sizes, YaRN's attention factor and score factor from mscale / mscale_all_dim, and what is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/error.h"
#include "qs/model/decoder_layer.h"
#include "qs/model/kv_cache.h"
#include "qs/model/latent_attention.h"
#include "qs/model/model_config.h"
#include "qs/model/rope.h"
#include "qs/model/transformer.h"
#include "qs/model/weight_source.h"

using namespace qs;
using namespace qs::model;

namespace {

using Vec = std::vector<double>;

nlohmann::json deepseekJson(bool lowRankQuery) {
    nlohmann::json j = {{"model_type", "deepseek_v3"},
                        {"hidden_size", 16},
                        {"intermediate_size", 24},
                        {"moe_intermediate_size", 8},
                        {"num_hidden_layers", 2},
                        {"num_attention_heads", 3},
                        {"num_key_value_heads", 3},
                        {"n_routed_experts", 4},
                        {"num_experts_per_tok", 2},
                        {"first_k_dense_replace", 2},  // both layers dense: the attention is under test here
                        {"kv_lora_rank", 6},
                        {"qk_nope_head_dim", 4},
                        {"qk_rope_head_dim", 4},
                        {"v_head_dim", 6},
                        {"vocab_size", 40},
                        {"max_position_embeddings", 64},
                        {"rms_norm_eps", 1e-5},
                        {"rope_theta", 100.0}};
    j["q_lora_rank"] = lowRankQuery ? nlohmann::json(5) : nlohmann::json(nullptr);
    return j;
}

MatrixF randomMatrix(std::mt19937& rng, int rows, int cols, float scale) {
    std::normal_distribution<float> n(0.0f, scale);
    MatrixF m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
    return m;
}

VectorF randomNorm(std::mt19937& rng, int n) {
    std::uniform_real_distribution<float> u(0.7f, 1.3f);
    VectorF v(n);
    for (int i = 0; i < n; ++i) v[i] = u(rng);
    return v;
}

Linear randomLinear(std::mt19937& rng, int out, int in, bool bias) {
    Linear l;
    l.weight = randomMatrix(rng, out, in, 0.6f);
    if (bias) l.bias = randomMatrix(rng, out, 1, 0.3f);
    return l;
}

LayerWeights randomLayer(const ModelConfig& c, std::mt19937& rng) {
    const LatentAttention& a = c.mla;
    const int h = c.hiddenSize, heads = c.numHeads;
    LayerWeights w;
    w.attention = c.attentionLayout();
    w.inputNorm = randomNorm(rng, h);
    w.postAttentionNorm = randomNorm(rng, h);
    if (a.qLoraRank > 0) {
        w.qA = randomLinear(rng, a.qLoraRank, h, c.qkvBias);
        w.qANorm = randomNorm(rng, a.qLoraRank);
        w.qB = randomLinear(rng, heads * a.qkHeadDim(), a.qLoraRank, false);
    } else {
        w.q = randomLinear(rng, heads * a.qkHeadDim(), h, false);
    }
    w.kvA = randomLinear(rng, a.kvLoraRank + a.qkRopeHeadDim, h, c.qkvBias);
    w.kvANorm = randomNorm(rng, a.kvLoraRank);
    w.kvB = randomLinear(rng, heads * (a.qkNopeHeadDim + a.vHeadDim), a.kvLoraRank, false);
    w.o = randomLinear(rng, h, heads * a.vHeadDim, c.outputBias);
    w.gate = randomLinear(rng, c.intermediateSize, h, false);
    w.up = randomLinear(rng, c.intermediateSize, h, false);
    w.down = randomLinear(rng, h, c.intermediateSize, false);
    return w;
}

Vec rmsRef(const Vec& x, const VectorF& w, double eps) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / double(x.size()) + eps);
    Vec y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w[Eigen::Index(i)];
    return y;
}

Vec linearRef(const Linear& l, const Vec& x) {
    Vec y(std::size_t(l.weight.rows()));
    for (Eigen::Index r = 0; r < l.weight.rows(); ++r) {
        double s = l.bias.size() > 0 ? l.bias[r] : 0.0;
        for (Eigen::Index c = 0; c < l.weight.cols(); ++c) s += double(l.weight(r, c)) * x[std::size_t(c)];
        y[std::size_t(r)] = s;
    }
    return y;
}

// Rotates the `dim` values at x[offset..] for position `pos`: pair i is (2i, 2i + 1) when interleaved
// (transformers' apply_rotary_pos_emb_interleave, up to the order it leaves them in, which no dot product
// sees), else (i, i + dim/2); cos and sin scaled by the rope's attention factor.
void rotateRef(Vec& x, std::size_t offset, int dim, int pos, bool interleaved, const RotaryEmbedding& rope) {
    const std::vector<double>& invFreq = rope.inverseFrequencies(pos + 1);
    for (int i = 0; i < dim / 2; ++i) {
        const std::size_t a = offset + std::size_t(interleaved ? 2 * i : i);
        const std::size_t b = offset + std::size_t(interleaved ? 2 * i + 1 : i + dim / 2);
        const double angle = pos * invFreq[std::size_t(i)], f = rope.attentionFactor();
        const double c = std::cos(angle) * f, s = std::sin(angle) * f;
        const double xa = x[a], xb = x[b];
        x[a] = xa * c - xb * s;
        x[b] = xb * c + xa * s;
    }
}

// One dense DeepSeek layer on hidden rows `x`, as DeepseekV3DecoderLayer computes it.
std::vector<Vec> layerRef(const ModelConfig& c, const LayerWeights& w, const std::vector<Vec>& x) {
    const LatentAttention& a = c.mla;
    const int heads = c.numHeads, nope = a.qkNopeHeadDim, rope = a.qkRopeHeadDim, qk = a.qkHeadDim(), v = a.vHeadDim;
    const RotaryEmbedding rotary(c);
    const std::size_t T = x.size();
    std::vector<Vec> q(T), k(T), values(T);
    for (std::size_t t = 0; t < T; ++t) {
        const Vec n = rmsRef(x[t], w.inputNorm, c.rmsNormEps);
        q[t] = a.qLoraRank > 0 ? linearRef(w.qB, rmsRef(linearRef(w.qA, n), w.qANorm, 1e-6)) : linearRef(w.q, n);
        const Vec kvA = linearRef(w.kvA, n);
        Vec kRot(kvA.begin() + a.kvLoraRank, kvA.end());
        const Vec kv = linearRef(w.kvB, rmsRef(Vec(kvA.begin(), kvA.begin() + a.kvLoraRank), w.kvANorm, 1e-6));
        rotateRef(kRot, 0, rope, int(t), a.ropeInterleave, rotary);
        for (int h = 0; h < heads; ++h) {
            rotateRef(q[t], std::size_t(h * qk + nope), rope, int(t), a.ropeInterleave, rotary);
            for (int d = 0; d < nope; ++d) k[t].push_back(kv[std::size_t(h * (nope + v) + d)]);
            k[t].insert(k[t].end(), kRot.begin(), kRot.end());
            for (int d = 0; d < v; ++d) values[t].push_back(kv[std::size_t(h * (nope + v) + nope + d)]);
        }
    }
    const double scale = a.scoreFactor / std::sqrt(double(qk));
    std::vector<Vec> out(T);
    for (std::size_t t = 0; t < T; ++t) {
        Vec context(std::size_t(heads * v), 0.0);
        for (int h = 0; h < heads; ++h) {
            Vec p(t + 1);
            double maxScore = -1e300, sum = 0;
            for (std::size_t j = 0; j <= t; ++j) {
                double s = 0;
                for (int d = 0; d < qk; ++d) s += q[t][std::size_t(h * qk + d)] * k[j][std::size_t(h * qk + d)];
                p[j] = s * scale;
                maxScore = std::max(maxScore, p[j]);
            }
            for (double& e : p) sum += (e = std::exp(e - maxScore));
            for (std::size_t j = 0; j <= t; ++j)
                for (int d = 0; d < v; ++d)
                    context[std::size_t(h * v + d)] += p[j] / sum * values[j][std::size_t(h * v + d)];
        }
        const Vec o = linearRef(w.o, context);
        Vec h1(x[t].size());
        for (std::size_t i = 0; i < h1.size(); ++i) h1[i] = x[t][i] + o[i];
        const Vec m = rmsRef(h1, w.postAttentionNorm, c.rmsNormEps);
        const Vec g = linearRef(w.gate, m), u = linearRef(w.up, m);
        Vec product(g.size());
        for (std::size_t i = 0; i < g.size(); ++i) product[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        const Vec down = linearRef(w.down, product);
        out[t] = h1;
        for (std::size_t i = 0; i < h1.size(); ++i) out[t][i] += down[i];
    }
    return out;
}

double maxLayerDifference(const ModelConfig& c, unsigned seed) {
    std::mt19937 rng(seed);
    const LayerWeights w = randomLayer(c, rng);
    const MatrixF x = randomMatrix(rng, 9, c.hiddenSize, 1.0f);
    std::vector<Vec> rows;
    for (Eigen::Index t = 0; t < x.rows(); ++t) rows.emplace_back(x.row(t).data(), x.row(t).data() + x.cols());
    const std::vector<Vec> expected = layerRef(c, w, rows);
    MatrixF hidden = x;
    const RotaryEmbedding rope(c);
    runDecoderLayer(w, hidden, DecoderLayerContext{c, rope, 0});
    double worst = 0;
    for (Eigen::Index t = 0; t < hidden.rows(); ++t)
        for (Eigen::Index i = 0; i < hidden.cols(); ++i)
            worst = std::max(worst, std::abs(double(hidden(t, i)) - expected[std::size_t(t)][std::size_t(i)]));
    return worst;
}

// f32 against the double reference through one layer: measured up to 2.6e-5 under OpenBLAS's default,
// Haswell, SkylakeX and Sandybridge kernels, one thread or two; a wrong part moves it by far more than 1e-2
// (TheReferenceTellsTheRotaryLayoutsAndTheScoreFactorApart).
constexpr double kTolerance = 1e-4;

double getMscale(double factor, double mscale) { return factor <= 1 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0; }

}  // namespace

// q_a_proj / q_a_layernorm / q_b_proj, interleaved rotary pairs, YaRN with mscale 0.5 and mscale_all_dim 0.8
// (cos and sin scaled by get_mscale(4, .5) / get_mscale(4, .8), the scores by get_mscale(4, .8)²), biased
// q_a / kv_a / o (attention_bias), values 6 wide against queries of 4 + 4.
TEST(LatentAttention, LowRankQueryWithYarnMatchesTheBruteForceReference) {
    nlohmann::json j = deepseekJson(true);
    j["attention_bias"] = true;
    j["rope_scaling"] = {{"type", "yarn"},
                         {"factor", 4.0},
                         {"original_max_position_embeddings", 16},
                         {"mscale", 0.5},
                         {"mscale_all_dim", 0.8}};
    const ModelConfig c = ModelConfig::fromJson(j);
    ASSERT_EQ(c.attentionLayout(), AttentionLayout::LatentLowRankQuery);
    EXPECT_NEAR(c.ropeScaling.attentionFactor, getMscale(4, 0.5) / getMscale(4, 0.8), 1e-15);
    EXPECT_NEAR(c.mla.scoreFactor, getMscale(4, 0.8) * getMscale(4, 0.8), 1e-15);
    EXPECT_TRUE(c.qkvBias && c.outputBias);
    EXPECT_LT(maxLayerDifference(c, 11), kTolerance);
}

// q_proj (q_lora_rank null), rotate_half's halves (rope_interleave false), no scaling.
TEST(LatentAttention, QueryProjectionWithoutInterleaveMatchesTheBruteForceReference) {
    nlohmann::json j = deepseekJson(false);
    j["rope_interleave"] = false;
    const ModelConfig c = ModelConfig::fromJson(j);
    ASSERT_EQ(c.attentionLayout(), AttentionLayout::Latent);
    EXPECT_EQ(c.mla.scoreFactor, 1.0);
    EXPECT_LT(maxLayerDifference(c, 12), kTolerance);
}

// The reference is no fixed point of a wrong model: the same layer with the pairs taken the other way, or
// without the score factor, is far from it.
TEST(LatentAttention, TheReferenceTellsTheRotaryLayoutsAndTheScoreFactorApart) {
    nlohmann::json j = deepseekJson(true);
    j["rope_scaling"] = {{"type", "yarn"},
                         {"factor", 40.0},
                         {"original_max_position_embeddings", 4},
                         {"mscale", 1.0},
                         {"mscale_all_dim", 1.0}};
    ModelConfig c = ModelConfig::fromJson(j);
    ASSERT_LT(maxLayerDifference(c, 13), kTolerance);
    std::mt19937 rng(13);
    const LayerWeights w = randomLayer(c, rng);
    const MatrixF x = randomMatrix(rng, 9, c.hiddenSize, 1.0f);
    const RotaryEmbedding rope(c);
    MatrixF right = x;
    runDecoderLayer(w, right, DecoderLayerContext{c, rope, 0});
    for (auto change :
         {+[](ModelConfig& m) { m.mla.ropeInterleave = false; }, +[](ModelConfig& m) { m.mla.scoreFactor = 1.0; }}) {
        ModelConfig other = c;
        change(other);
        MatrixF wrong = x;
        runDecoderLayer(w, wrong, DecoderLayerContext{other, rope, 0});
        EXPECT_GT((wrong - right).cwiseAbs().maxCoeff(), 1e-2f);
    }
}

// The hook sees each distinct input once: q_a and kv_a the normed state, q_b the normed q latent, kv_b the
// normed kv latent, o the values' context (heads * v_head_dim wide).
TEST(LatentAttention, TheHookSeesEachLinearsTrueInput) {
    const ModelConfig c = ModelConfig::fromJson(deepseekJson(true));
    std::mt19937 rng(5);
    const LayerWeights w = randomLayer(c, rng);
    MatrixF hidden = randomMatrix(rng, 7, c.hiddenSize, 1.0f);
    std::vector<std::string> seen;
    MatrixF kvBInput;
    const LinearInputHook hook = [&](const LinearInput& in) {
        std::string names;
        for (auto m : in.modules) names += std::string(m) + ",";
        seen.push_back(names + std::to_string(in.x.cols()));
        if (names == "self_attn.kv_b_proj,") kvBInput = in.x;
    };
    const RotaryEmbedding rope(c);
    const MatrixF before = hidden;
    runDecoderLayer(w, hidden, DecoderLayerContext{c, rope, 0, 0, nullptr, &hook});
    const std::vector<std::string> expected{"self_attn.q_a_proj,self_attn.kv_a_proj_with_mqa,16",
                                            "self_attn.q_b_proj,5",
                                            "self_attn.kv_b_proj,6",
                                            "self_attn.o_proj,18",
                                            "mlp.gate_proj,mlp.up_proj,16",
                                            "mlp.down_proj,24"};
    EXPECT_EQ(seen, expected);
    // kv_b_proj reads kv_a_layernorm's output of kv_a_proj_with_mqa's first kv_lora_rank columns.
    for (Eigen::Index t = 0; t < before.rows(); ++t) {
        const Vec n =
            rmsRef(Vec(before.row(t).data(), before.row(t).data() + before.cols()), w.inputNorm, c.rmsNormEps);
        const Vec kvA = linearRef(w.kvA, n);
        const Vec latent = rmsRef(Vec(kvA.begin(), kvA.begin() + c.mla.kvLoraRank), w.kvANorm, 1e-6);
        for (int i = 0; i < c.mla.kvLoraRank; ++i) EXPECT_NEAR(kvBInput(t, i), latent[std::size_t(i)], 1e-5);
    }
    EXPECT_EQ(w.linearModules(),
              (std::vector<std::string>{"self_attn.q_a_proj", "self_attn.kv_a_proj_with_mqa", "self_attn.q_b_proj",
                                        "self_attn.kv_b_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
                                        "mlp.down_proj"}));
    EXPECT_THROW((void)w.linear("self_attn.k_proj"), Error);
}

// Generation through the KV cache (each layer's keys and padded values) gives the full forward's logits.
TEST(LatentAttention, KvCacheStepsEqualTheFullForward) {
    const ModelConfig c = ModelConfig::fromJson(deepseekJson(true));
    std::mt19937 rng(9);
    auto weights = std::make_shared<ModelWeights>();
    weights->embedding = randomMatrix(rng, c.vocabSize, c.hiddenSize, 1.0f);
    for (int l = 0; l < c.numLayers; ++l) weights->layers.push_back(randomLayer(c, rng));
    weights->norm = randomNorm(rng, c.hiddenSize);
    weights->lmHeadWeight = randomMatrix(rng, c.vocabSize, c.hiddenSize, 1.0f);
    Transformer model(c, weights);
    const std::vector<TokenId> tokens{3, 17, 5, 39, 0, 22, 8, 8, 13};
    const MatrixF full = model.forward(tokens);
    KvCache cache(c, 16);
    const std::span<const TokenId> all(tokens);
    MatrixF rows = model.forward(all.first(3), cache);
    for (std::size_t t = 3; t < tokens.size(); ++t) {
        const MatrixF step = model.forward(all.subspan(t, 1), cache);
        rows.conservativeResize(rows.rows() + 1, Eigen::NoChange);
        rows.bottomRows(1) = step;
    }
    EXPECT_LT((rows - full).cwiseAbs().maxCoeff(), 1e-4f);
}

TEST(LatentAttention, TheConfigIsReadWithDeepseeksKeysAndKimiK2sModelType) {
    nlohmann::json j = deepseekJson(true);
    j["head_dim"] = 4;  // transformers saves DeepseekV3Config.head_dim = qk_rope_head_dim
    const ModelConfig c = ModelConfig::fromJson(j);
    EXPECT_EQ(c.headDim, 8);
    EXPECT_EQ(c.valueHeadDim(), 6);
    EXPECT_EQ(c.rotaryDims(), 4);
    EXPECT_EQ(c.mla.qLoraRank, 5);
    EXPECT_EQ(c.mla.kvLoraRank, 6);
    EXPECT_TRUE(c.mla.ropeInterleave);
    EXPECT_EQ(c.moe.scoring, RouterScoring::SigmoidGrouped);
    EXPECT_EQ(c.moe.firstDenseLayers, 2);
    j["model_type"] = "kimi_k2";
    EXPECT_EQ(ModelConfig::fromJson(j).mla.kvLoraRank, 6);
}

TEST(LatentAttention, WhatTheForwardPassDoesNotImplementIsRefusedByKey) {
    const auto refused = [](const std::string& key, const nlohmann::json& value, const std::string& what) {
        nlohmann::json j = deepseekJson(true);
        j[key] = value;
        try {
            (void)ModelConfig::fromJson(j);
            ADD_FAILURE() << key << " was accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
        }
    };
    refused("topk_method", "greedy", "topk_method 'greedy'");
    refused("scoring_func", "softmax", "scoring_func 'softmax'");
    refused("num_key_value_heads", 1, "num_key_value_heads 1");
    refused("v_head_dim", 9, "v_head_dim 9");
    refused("q_lora_rank", 0, "q_lora_rank");
    refused("qk_rope_head_dim", 3, "qk_rope_head_dim");
    nlohmann::json noRank = deepseekJson(true);
    noRank.erase("kv_lora_rank");
    EXPECT_THROW((void)ModelConfig::fromJson(noRank), Error);
}
