// The forward pass against (1) llama2.c's outputs for the real stories260K model and (2) a brute-force
// double-precision transformer written here with plain loops, on a small random Qwen3-style model
// (GQA, head_dim != hidden/heads, q/k RMSNorm, q/k/v biases).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/io/dtype.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/greedy_decoder.h"
#include "qs/model/kv_cache.h"
#include "qs/model/layer_math.h"
#include "qs/model/model_config.h"
#include "qs/model/rope.h"
#include "qs/model/transformer.h"
#include "qs/quant/rtn.h"

namespace fs = std::filesystem;
using namespace qs;
using namespace qs::model;

namespace {

// ---------------------------------------------------------------------------------------------
// stories260K

const fs::path kStoriesDir = fs::path(QS_RESOURCES_DIR) / "models" / "stories260K";
const fs::path kStoriesData = fs::path(QS_TEST_DATA_DIR) / "stories260K";

nlohmann::json readJson(const fs::path& p) {
    std::ifstream in(p);
    return nlohmann::json::parse(in);
}

std::string readText(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// llama2.c's tok512.bin: int32 max length, then per token f32 score, int32 length, bytes.
std::vector<std::string> readLlama2cVocab(const fs::path& p, int vocabSize) {
    const std::string bytes = readText(p);
    std::size_t at = 4;
    std::vector<std::string> pieces;
    for (int i = 0; i < vocabSize; ++i) {
        std::int32_t len = 0;
        std::memcpy(&len, bytes.data() + at + 4, 4);
        pieces.push_back(bytes.substr(at + 8, static_cast<std::size_t>(len)));
        at += 8 + static_cast<std::size_t>(len);
    }
    return pieces;
}

// run.c's decode(): the first piece after BOS loses its leading space; <0xXX> pieces are raw bytes.
std::string decodeLikeRunC(const std::vector<std::string>& vocab, const std::vector<TokenId>& ids) {
    std::string text;
    TokenId prev = 1;
    for (TokenId id : ids) {
        std::string piece = vocab[static_cast<std::size_t>(id)];
        if (prev == 1 && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
        unsigned byte = 0;
        if (piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%02X>", &byte) == 1)
            piece = std::string(1, static_cast<char>(byte));
        text += piece;
        prev = id;
    }
    return text;
}

TEST(Stories260K, LogitsOfTheFirstFourPositionsMatchLlama2c) {
    const nlohmann::json ref = readJson(kStoriesData / "reference_greedy.json");
    Transformer model = Transformer::fromCheckpoint(io::Checkpoint::open(kStoriesDir));
    const std::vector<int> greedy = ref["greedy_ids"].get<std::vector<int>>();
    const std::vector<TokenId> tokens{1, greedy[0], greedy[1], greedy[2]};
    const MatrixF logits = model.forward(tokens);
    ASSERT_EQ(logits.rows(), 4);
    ASSERT_EQ(logits.cols(), 512);
    double maxDiff = 0.0;
    for (int t = 0; t < 4; ++t) {
        const std::vector<float> expected = ref["logits_first4"][t].get<std::vector<float>>();
        ASSERT_EQ(expected.size(), 512u);
        for (int v = 0; v < 512; ++v)
            maxDiff = std::max(maxDiff, std::abs(double(logits(t, v)) - expected[std::size_t(v)]));
    }
    RecordProperty("max_abs_logit_diff", std::to_string(maxDiff));
    std::printf("stories260K: max |logit - llama2.c| over 4 x 512 = %.3g\n", maxDiff);
    EXPECT_LT(maxDiff, 1e-4);
}

TEST(Stories260K, GreedyDecodingReproducesLlama2cIds) {
    const nlohmann::json ref = readJson(kStoriesData / "reference_greedy.json");
    Transformer model = Transformer::fromCheckpoint(io::Checkpoint::open(kStoriesDir), {.keepAllLayers = true});
    const std::vector<TokenId> bos{ref["bos"].get<TokenId>()};
    const std::vector<TokenId> expected = ref["greedy_ids"].get<std::vector<TokenId>>();
    EXPECT_EQ(greedyDecode(model, bos, static_cast<int>(expected.size())), expected);
}

TEST(Stories260K, GreedyTextOf256StepsEqualsRunC) {
    Transformer model = Transformer::fromCheckpoint(io::Checkpoint::open(kStoriesDir), {.keepAllLayers = true});
    const std::vector<TokenId> bos{1};
    std::vector<TokenId> ids = greedyDecode(model, bos, 256, /*stopToken=*/1);
    if (!ids.empty() && ids.back() == 1) ids.pop_back();  // run.c stops at BOS without printing it
    const std::string text = decodeLikeRunC(readLlama2cVocab(kStoriesData / "tok512.bin", 512), ids);
    EXPECT_EQ(text + "\n", readText(kStoriesData / "reference_greedy_256steps_run.c.txt"));
}

TEST(Stories260K, BatchedForwardAgreesWithCachedGreedySteps) {
    const nlohmann::json ref = readJson(kStoriesData / "reference_greedy.json");
    Transformer model = Transformer::fromCheckpoint(io::Checkpoint::open(kStoriesDir));
    const std::vector<TokenId> greedy = ref["greedy_ids"].get<std::vector<TokenId>>();
    std::vector<TokenId> seq{1};
    seq.insert(seq.end(), greedy.begin(), greedy.end() - 1);
    const MatrixF logits = model.forward(seq);
    for (std::size_t t = 0; t < seq.size(); ++t)
        EXPECT_EQ(argmax(logits.row(Eigen::Index(t)).transpose()), greedy[t]) << "position " << t;
}

TEST(Stories260K, ConfigIsReadFromConfigJson) {
    const ModelConfig c = ModelConfig::fromJson(io::Checkpoint::open(kStoriesDir).config());
    EXPECT_EQ(c.modelType, "llama");
    EXPECT_EQ(c.hiddenSize, 64);
    EXPECT_EQ(c.numHeads, 8);
    EXPECT_EQ(c.numKvHeads, 4);
    EXPECT_EQ(c.headDim, 8);
    EXPECT_EQ(c.intermediateSize, 172);
    EXPECT_TRUE(c.tieWordEmbeddings);
    EXPECT_FALSE(c.qkvBias);
    EXPECT_FALSE(c.qkNorm);
    EXPECT_DOUBLE_EQ(c.rmsNormEps, 1e-5);
}

// ---------------------------------------------------------------------------------------------
// A small random model and a brute-force double-precision reference.

ModelConfig smallConfig() {
    ModelConfig c;
    c.modelType = "qwen3";
    c.hiddenSize = 16;
    c.intermediateSize = 24;
    c.numLayers = 2;
    c.numHeads = 4;
    c.numKvHeads = 2;
    c.headDim = 6;  // qDim 24 != hidden 16: o_proj is [16, 24]
    c.vocabSize = 40;
    c.maxPositionEmbeddings = 64;
    c.rmsNormEps = 1e-6;
    c.ropeTheta = 100.0;  // a small theta makes every frequency turn visibly over a few positions
    c.qkvBias = true;
    c.qkNorm = true;
    return c;
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

std::shared_ptr<ModelWeights> randomWeights(const ModelConfig& c, unsigned seed, bool tied) {
    std::mt19937 rng(seed);
    auto w = std::make_shared<ModelWeights>();
    w->embedding = randomMatrix(rng, c.vocabSize, c.hiddenSize, 1.0f);
    for (int l = 0; l < c.numLayers; ++l) {
        LayerWeights lw;
        lw.inputNorm = randomNorm(rng, c.hiddenSize);
        lw.postAttentionNorm = randomNorm(rng, c.hiddenSize);
        if (!c.arch.attentionOutputNorm.empty()) lw.attentionOutputNorm = randomNorm(rng, c.hiddenSize);
        if (!c.arch.mlpOutputNorm.empty()) lw.mlpOutputNorm = randomNorm(rng, c.hiddenSize);
        if (c.qkNorm) {
            lw.qNorm = randomNorm(rng, c.headDim);
            lw.kNorm = randomNorm(rng, c.headDim);
        }
        const float s = 0.4f;
        lw.q.weight = randomMatrix(rng, c.qDim(), c.hiddenSize, s);
        lw.k.weight = randomMatrix(rng, c.kvDim(), c.hiddenSize, s);
        lw.v.weight = randomMatrix(rng, c.kvDim(), c.hiddenSize, s);
        lw.o.weight = randomMatrix(rng, c.hiddenSize, c.qDim(), s);
        if (c.outputBias) lw.o.bias = randomMatrix(rng, c.hiddenSize, 1, s);
        if (c.qkvBias) {
            lw.q.bias = randomMatrix(rng, c.qDim(), 1, s);
            lw.k.bias = randomMatrix(rng, c.kvDim(), 1, s);
            lw.v.bias = randomMatrix(rng, c.kvDim(), 1, s);
        }
        if (c.isMoeLayer(l)) {
            const int ff = c.moe.expertIntermediateSize;
            lw.moeNames = c.moe.names;
            lw.router.weight = randomMatrix(rng, c.moe.numExperts, c.hiddenSize, 1.0f);
            for (int e = 0; e < c.moe.numExperts; ++e) {
                Expert x;
                x.gate.weight = randomMatrix(rng, ff, c.hiddenSize, s);
                x.up.weight = randomMatrix(rng, ff, c.hiddenSize, s);
                x.down.weight = randomMatrix(rng, c.hiddenSize, ff, s);
                lw.experts.push_back(std::move(x));
            }
            w->layers.push_back(std::move(lw));
            continue;
        }
        lw.gate.weight = randomMatrix(rng, c.intermediateSize, c.hiddenSize, s);
        lw.up.weight = randomMatrix(rng, c.intermediateSize, c.hiddenSize, s);
        lw.down.weight = randomMatrix(rng, c.hiddenSize, c.intermediateSize, s);
        w->layers.push_back(std::move(lw));
    }
    w->norm = randomNorm(rng, c.hiddenSize);
    if (!tied) w->lmHeadWeight = randomMatrix(rng, c.vocabSize, c.hiddenSize, 1.0f);
    return w;
}

using Vec = std::vector<double>;

// offset 1: Gemma's x / rms * (1 + w).
Vec rmsRef(const Vec& x, const VectorF& w, double eps, double offset = 0.0) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / double(x.size()) + eps);
    Vec y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * (offset + w[Eigen::Index(i)]);
    return y;
}

Vec linearRef(const Linear& l, const Vec& x) {
    Vec y(std::size_t(l.weight.rows()), 0.0);
    for (Eigen::Index r = 0; r < l.weight.rows(); ++r) {
        double acc = l.bias.size() ? double(l.bias[r]) : 0.0;
        for (Eigen::Index c = 0; c < l.weight.cols(); ++c) acc += double(l.weight(r, c)) * x[std::size_t(c)];
        y[std::size_t(r)] = acc;
    }
    return y;
}

// HF rotate_half on one head: element i pairs with i + d/2, angle = pos * theta^(-2i/d) / linear factor.
void ropeRef(double* head, int d, int pos, double theta, double linearFactor = 1.0) {
    for (int i = 0; i < d / 2; ++i) {
        const double a = pos * std::pow(theta, -2.0 * i / d) / linearFactor;
        const double x1 = head[i], x2 = head[i + d / 2];
        head[i] = x1 * std::cos(a) - x2 * std::sin(a);
        head[i + d / 2] = x2 * std::cos(a) + x1 * std::sin(a);
    }
}

void headNormRef(Vec& x, int heads, const VectorF& w, double eps, double offset) {
    if (w.size() == 0) return;
    const int d = int(w.size());
    for (int h = 0; h < heads; ++h) {
        Vec part(x.begin() + h * d, x.begin() + (h + 1) * d);
        part = rmsRef(part, w, eps, offset);
        std::copy(part.begin(), part.end(), x.begin() + h * d);
    }
}

// Layer `layer`'s attention: its window and RoPE (Gemma's sliding layers: the local base, unscaled; the
// others rope_theta with the linear factor), scores scaled by query_pre_attn_scalar^-1/2 when set.
std::vector<Vec> attentionRef(const ModelConfig& c, const LayerWeights& w, const std::vector<Vec>& normed, int layer) {
    const int T = int(normed.size()), d = c.headDim;
    const bool local = c.ropeLocalTheta > 0 && !c.slidingLayers.empty() && c.slidingLayers[std::size_t(layer)];
    const double theta = local ? c.ropeLocalTheta : c.ropeTheta;
    const double factor = !local && c.ropeScaling.type == RopeScalingType::Linear ? c.ropeScaling.factor : 1.0;
    const int window =
        c.slidingLayers.empty() ? c.slidingWindow : (c.slidingLayers[std::size_t(layer)] ? c.slidingWindow : 0);
    const double scoreScale = 1.0 / std::sqrt(c.queryPreAttnScalar > 0 ? c.queryPreAttnScalar : double(d));
    const double offset = c.arch.normOffset;
    std::vector<Vec> q(static_cast<std::size_t>(T)), k(static_cast<std::size_t>(T)), v(static_cast<std::size_t>(T)),
        out(static_cast<std::size_t>(T), Vec(std::size_t(c.qDim()), 0.0));
    for (int t = 0; t < T; ++t) {
        q[t] = linearRef(w.q, normed[t]);
        k[t] = linearRef(w.k, normed[t]);
        v[t] = linearRef(w.v, normed[t]);
        headNormRef(q[t], c.numHeads, w.qNorm, c.rmsNormEps, offset);
        headNormRef(k[t], c.numKvHeads, w.kNorm, c.rmsNormEps, offset);
        for (int h = 0; h < c.numHeads; ++h) ropeRef(q[t].data() + h * d, d, t, theta, factor);
        for (int h = 0; h < c.numKvHeads; ++h) ropeRef(k[t].data() + h * d, d, t, theta, factor);
    }
    for (int h = 0; h < c.numHeads; ++h) {
        const int kvh = h / (c.numHeads / c.numKvHeads);
        for (int i = 0; i < T; ++i) {
            const int lo = window > 0 ? std::max(0, i - window + 1) : 0;  // Mistral's and Gemma's windows
            Vec s(std::size_t(i + 1), 0.0);
            double mx = -1e300, sum = 0;
            for (int j = lo; j <= i; ++j) {
                double dot = 0;
                for (int e = 0; e < d; ++e) dot += q[i][std::size_t(h * d + e)] * k[j][std::size_t(kvh * d + e)];
                s[std::size_t(j)] = dot * scoreScale;
                mx = std::max(mx, s[std::size_t(j)]);
            }
            for (int j = lo; j <= i; ++j) sum += (s[std::size_t(j)] = std::exp(s[std::size_t(j)] - mx));
            for (int j = lo; j <= i; ++j)
                for (int e = 0; e < d; ++e)
                    out[i][std::size_t(h * d + e)] += s[std::size_t(j)] / sum * v[j][std::size_t(kvh * d + e)];
        }
    }
    return out;
}

// down(act(gate(m)) * up(m)): SiLU, or Gemma's gelu with the tanh approximation.
Vec swigluRef(const Linear& gate, const Linear& up, const Linear& down, const Vec& m, Activation a = Activation::Silu) {
    const Vec g = linearRef(gate, m), u = linearRef(up, m);
    Vec act(g.size());
    const double k = std::sqrt(2.0 / 3.141592653589793);
    for (std::size_t i = 0; i < g.size(); ++i)
        act[i] = (a == Activation::Silu ? g[i] / (1.0 + std::exp(-g[i]))
                                        : 0.5 * g[i] * (1.0 + std::tanh(k * (g[i] + 0.044715 * g[i] * g[i] * g[i])))) *
                 u[i];
    return linearRef(down, act);
}

// transformers' sparse MoE block for one token: softmax over every expert, the k most probable,
// their probabilities renormalised to sum 1 when norm_topk_prob (always for Mixtral).
Vec moeRef(const ModelConfig& c, const LayerWeights& lw, const Vec& m) {
    const Vec logits = linearRef(lw.router, m);
    double top = -1e300, sum = 0.0;
    for (double l : logits) top = std::max(top, l);
    Vec p(logits.size());
    for (std::size_t e = 0; e < p.size(); ++e) sum += p[e] = std::exp(logits[e] - top);
    for (double& v : p) v /= sum;
    std::vector<std::size_t> order(p.size());
    for (std::size_t e = 0; e < order.size(); ++e) order[e] = e;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p[a] > p[b]; });
    const std::size_t k = std::size_t(c.moe.numExpertsPerToken);
    double chosen = 0.0;
    for (std::size_t i = 0; i < k; ++i) chosen += p[order[i]];
    Vec out(m.size(), 0.0);
    for (std::size_t i = 0; i < k; ++i) {
        const Expert& x = lw.experts[order[i]];
        const double weight = c.moe.normTopkProb ? p[order[i]] / chosen : p[order[i]];
        const Vec y = swigluRef(x.gate, x.up, x.down, m);
        for (std::size_t j = 0; j < m.size(); ++j) out[j] += weight * y[j];
    }
    return out;
}

MatrixD forwardRef(const ModelConfig& c, const ModelWeights& w, const std::vector<TokenId>& tokens) {
    const int T = int(tokens.size());
    std::vector<Vec> x(static_cast<std::size_t>(T));
    for (int t = 0; t < T; ++t) {
        x[t].resize(std::size_t(c.hiddenSize));
        for (int i = 0; i < c.hiddenSize; ++i)
            x[t][std::size_t(i)] = w.embedding(tokens[std::size_t(t)], i) * c.embeddingScale;
    }
    const double offset = c.arch.normOffset;
    for (std::size_t l = 0; l < w.layers.size(); ++l) {
        const LayerWeights& lw = w.layers[l];
        std::vector<Vec> normed(static_cast<std::size_t>(T));
        for (int t = 0; t < T; ++t) normed[t] = rmsRef(x[t], lw.inputNorm, c.rmsNormEps, offset);
        const std::vector<Vec> ctx = attentionRef(c, lw, normed, int(l));
        for (int t = 0; t < T; ++t) {
            Vec o = linearRef(lw.o, ctx[t]);
            if (lw.attentionOutputNorm.size())
                o = rmsRef(o, lw.attentionOutputNorm, c.rmsNormEps, offset);  // Gemma's post-norm
            for (int i = 0; i < c.hiddenSize; ++i) x[t][std::size_t(i)] += o[std::size_t(i)];
            const Vec m = rmsRef(x[t], lw.postAttentionNorm, c.rmsNormEps, offset);
            Vec down = lw.isMoe() ? moeRef(c, lw, m) : swigluRef(lw.gate, lw.up, lw.down, m, c.arch.activation);
            if (lw.mlpOutputNorm.size()) down = rmsRef(down, lw.mlpOutputNorm, c.rmsNormEps, offset);
            for (int i = 0; i < c.hiddenSize; ++i) x[t][std::size_t(i)] += down[std::size_t(i)];
        }
    }
    const MatrixF& head = w.lmHeadWeight.size() ? w.lmHeadWeight : w.embedding;
    MatrixD logits(T, c.vocabSize);
    for (int t = 0; t < T; ++t) {
        const Vec n = rmsRef(x[t], w.norm, c.rmsNormEps, offset);
        for (int v = 0; v < c.vocabSize; ++v) {
            double acc = 0;
            for (int i = 0; i < c.hiddenSize; ++i) acc += double(head(v, i)) * n[std::size_t(i)];
            logits(t, v) = acc;
        }
    }
    return logits;
}

const std::vector<TokenId> kTokens{3, 17, 5, 39, 0, 22, 22, 8, 31, 12, 1};

double maxAbsDiff(const MatrixF& a, const MatrixD& b) { return (a.cast<double>() - b).cwiseAbs().maxCoeff(); }

TEST(SmallTransformer, MatchesBruteForceDoubleReference) {
    const ModelConfig c = smallConfig();
    auto w = randomWeights(c, 7, /*tied=*/true);
    Transformer model(c, w);
    const MatrixF logits = model.forward(kTokens);
    const MatrixD ref = forwardRef(c, *w, kTokens);
    ASSERT_GT(ref.cwiseAbs().maxCoeff(), 1.0);  // the check is not vacuous
    EXPECT_LT(maxAbsDiff(logits, ref), 2e-4 * ref.cwiseAbs().maxCoeff());
}

TEST(SmallTransformer, MatchesReferenceWithoutQkNormOrBiasAndWithMultiQuery) {
    ModelConfig c = smallConfig();
    c.modelType = "llama";
    c.qkNorm = false;
    c.qkvBias = false;
    c.numKvHeads = 1;
    auto w = randomWeights(c, 11, /*tied=*/false);
    Transformer model(c, w);
    const MatrixD ref = forwardRef(c, *w, kTokens);
    EXPECT_LT(maxAbsDiff(model.forward(kTokens), ref), 2e-4 * ref.cwiseAbs().maxCoeff());
}

TEST(SmallTransformer, SlidingWindowLimitsAttentionInFullAndCachedRuns) {
    ModelConfig c = smallConfig();
    c.modelType = "mistral";
    c.slidingWindow = 3;
    auto w = randomWeights(c, 13, true);
    Transformer model(c, w);
    const MatrixF full = model.forward(kTokens);
    const MatrixD ref = forwardRef(c, *w, kTokens);
    EXPECT_LT(maxAbsDiff(full, ref), 2e-4 * ref.cwiseAbs().maxCoeff());
    ModelConfig unlimited = c;
    unlimited.slidingWindow = 0;
    EXPECT_GT(maxAbsDiff(full, forwardRef(unlimited, *w, kTokens)), 1e-2);  // the window matters here
    KvCache cache(c, 32);
    const std::span<const TokenId> all(kTokens);
    model.forward(all.first(kTokens.size() - 1), cache);
    const MatrixF last = model.forward(all.last(1), cache);
    EXPECT_LT((last.row(0) - full.bottomRows(1)).cwiseAbs().maxCoeff(), 1e-5f);
}

TEST(SmallTransformer, UntiedLmHeadIsUsedAndDiffersFromTied) {
    const ModelConfig c = smallConfig();
    auto untied = randomWeights(c, 7, /*tied=*/false);
    auto tied = std::make_shared<ModelWeights>(*untied);
    tied->lmHeadWeight.resize(0, 0);
    Transformer a(c, untied), b(c, tied);
    const MatrixF la = a.forward(kTokens), lb = b.forward(kTokens);
    EXPECT_LT(maxAbsDiff(la, forwardRef(c, *untied, kTokens)), 1e-3);
    EXPECT_LT(maxAbsDiff(lb, forwardRef(c, *tied, kTokens)), 1e-3);
    EXPECT_GT((la - lb).cwiseAbs().maxCoeff(), 0.1f);
}

TEST(SmallTransformer, LayerByLayerEqualsForwardAndHookSeesEachLinearInputOnce) {
    const ModelConfig c = smallConfig();
    auto w = randomWeights(c, 7, true);
    Transformer model(c, w);
    MatrixF hidden = model.embed(kTokens);
    std::vector<std::string> seen;
    MatrixF firstQkvInput;
    const LinearInputHook hook = [&](const LinearInput& in) {
        std::string names;
        for (auto m : in.modules) names += std::string(m) + ",";
        seen.push_back(std::to_string(in.layer) + ":" + names + std::to_string(in.x.cols()));
        EXPECT_EQ(in.x.rows(), Eigen::Index(kTokens.size()));
        if (seen.size() == 1) firstQkvInput = in.x;
    };
    for (int i = 0; i < c.numLayers; ++i) model.runLayer(i, hidden, hook);
    EXPECT_LT((model.finalLogits(hidden) - model.forward(kTokens)).cwiseAbs().maxCoeff(), 1e-6f);
    const std::vector<std::string> expected{"0:self_attn.q_proj,self_attn.k_proj,self_attn.v_proj,16",
                                            "0:self_attn.o_proj,24",
                                            "0:mlp.gate_proj,mlp.up_proj,16",
                                            "0:mlp.down_proj,24",
                                            "1:self_attn.q_proj,self_attn.k_proj,self_attn.v_proj,16",
                                            "1:self_attn.o_proj,24",
                                            "1:mlp.gate_proj,mlp.up_proj,16",
                                            "1:mlp.down_proj,24"};
    EXPECT_EQ(seen, expected);
    // The q/k/v input of layer 0 is the normalized embedding.
    for (std::size_t t = 0; t < kTokens.size(); ++t) {
        Vec e(16);
        for (int i = 0; i < 16; ++i) e[std::size_t(i)] = w->embedding(kTokens[t], i);
        const Vec n = rmsRef(e, w->layers[0].inputNorm, c.rmsNormEps);
        for (int i = 0; i < 16; ++i) EXPECT_NEAR(firstQkvInput(Eigen::Index(t), i), n[std::size_t(i)], 1e-5);
    }
}

TEST(SmallTransformer, ExplicitLayerWeightsRunLikeAnOverride) {
    const ModelConfig c = smallConfig();
    auto w = randomWeights(c, 17, true);
    Transformer model(c, w);
    LayerWeights changed = model.layerWeights(0);
    changed.o.weight *= -1.0f;
    MatrixF explicitRun = model.embed(kTokens);
    model.runLayer(0, changed, explicitRun);
    const MatrixF flipped = changed.o.weight;
    model.overrideLinear(0, "self_attn.o_proj", [flipped] { return flipped; });
    MatrixF overridden = model.embed(kTokens);
    model.runLayer(0, overridden);
    EXPECT_EQ(explicitRun, overridden);
    model.clearOverrides();
    MatrixF plain = model.embed(kTokens);
    model.runLayer(0, plain);
    EXPECT_GT((plain - explicitRun).cwiseAbs().maxCoeff(), 1e-2f);
}

TEST(SmallTransformer, KvCacheStepsEqualTheFullForward) {
    const ModelConfig c = smallConfig();
    Transformer model(c, randomWeights(c, 3, true));
    const MatrixF full = model.forward(kTokens);
    KvCache cache(c, 32);
    const std::span<const TokenId> all(kTokens);
    MatrixF rows = model.forward(all.first(4), cache);
    for (std::size_t t = 4; t < kTokens.size(); ++t) {
        MatrixF step = model.forward(all.subspan(t, 1), cache);
        rows.conservativeResize(rows.rows() + 1, Eigen::NoChange);
        rows.bottomRows(1) = step;
    }
    EXPECT_EQ(cache.length(), int(kTokens.size()));
    EXPECT_LT((rows - full).cwiseAbs().maxCoeff(), 1e-5f);
}

// A LayerMath that records what it was asked and can perturb one linear, so the tests can see that
// every GEMM and attention of a forward pass (cached or not) goes through the model's LayerMath.
class RecordingMath final : public LayerMath {
public:
    std::string_view name() const override { return "recording"; }
    MatrixF linear(const MatrixF& x, const Linear& l) const override {
        ++linears;
        MatrixF y = cpuLayerMath().linear(x, l);
        if (l.weight.rows() == perturbRows) y.array() += 0.5f;
        return y;
    }
    MatrixF attention(const Eigen::Ref<const MatrixF>& q, const Eigen::Ref<const MatrixF>& k,
                      const Eigen::Ref<const MatrixF>& v, const AttentionShape& shape) const override {
        ++attentions;
        return cpuLayerMath().attention(q, k, v, shape);
    }
    MatrixF product(const MatrixF& x, const MatrixF& w) const override {
        ++products;
        return cpuLayerMath().product(x, w);
    }
    mutable int linears = 0;
    mutable int attentions = 0;
    mutable int products = 0;
    std::int64_t perturbRows = -1;
};

TEST(SmallTransformer, EveryGemmAndAttentionRunsOnTheModelsLayerMath) {
    const ModelConfig c = smallConfig();
    Transformer model(c, randomWeights(c, 3, true));
    EXPECT_EQ(model.layerMath().name(), "CPU");
    const MatrixF reference = model.forward(kTokens);
    auto math = std::make_shared<RecordingMath>();
    model.setLayerMath(math);
    EXPECT_EQ(model.forward(kTokens), reference);  // the CPU's arithmetic, reached through the interface
    EXPECT_EQ(math->linears, 7 * c.numLayers);
    EXPECT_EQ(math->attentions, c.numLayers);
    EXPECT_EQ(math->products, 1) << "lm_head";

    KvCache cache(c, 32);
    const std::span<const TokenId> all(kTokens);
    model.forward(all.first(4), cache);
    model.forward(all.subspan(4, 1), cache);
    EXPECT_EQ(math->attentions, 3 * c.numLayers);

    math->perturbRows = c.intermediateSize;  // gate, up and (24 = 4 heads x 6) q
    EXPECT_GT((model.forward(kTokens) - reference).cwiseAbs().maxCoeff(), 1e-3f);
    model.setLayerMath(nullptr);
    EXPECT_EQ(model.forward(kTokens), reference);
}

TEST(SmallTransformer, OverriddenLinearIsUsedAndCanBeCleared) {
    const ModelConfig c = smallConfig();
    auto w = randomWeights(c, 5, true);
    Transformer model(c, w);
    const MatrixF before = model.forward(kTokens);
    auto changed = std::make_shared<ModelWeights>(*w);
    changed->layers[1].down.weight *= 0.5f;
    const MatrixF halfDown = w->layers[1].down.weight * 0.5f;
    model.overrideLinear(1, "mlp.down_proj", [halfDown] { return halfDown; });
    EXPECT_LT(maxAbsDiff(model.forward(kTokens), forwardRef(c, *changed, kTokens)), 1e-3);
    EXPECT_GT((model.forward(kTokens) - before).cwiseAbs().maxCoeff(), 1e-2f);
    model.clearOverrides();
    EXPECT_LT((model.forward(kTokens) - before).cwiseAbs().maxCoeff(), 1e-6f);
    EXPECT_THROW(model.overrideLinear(0, "mlp.nonsense", [] { return MatrixF(); }), Error);
    model.overrideLinear(0, "mlp.up_proj", [] { return MatrixF(3, 3); });
    EXPECT_THROW(model.forward(kTokens), Error);
}

TEST(SmallTransformer, RejectsTokensOutsideTheVocabularyAndTooLongSequences) {
    const ModelConfig c = smallConfig();
    Transformer model(c, randomWeights(c, 5, true));
    const std::vector<TokenId> bad{1, 40};
    EXPECT_THROW(model.forward(bad), Error);
    const std::vector<TokenId> tooLong(65, 1);
    EXPECT_THROW(model.forward(tooLong), Error);
}

TEST(SmallTransformer, QuantizedLinearOverrideRunsItsEffectiveWeight) {
    const ModelConfig c = smallConfig();
    auto w = randomWeights(c, 9, true);
    Transformer model(c, w);
    const MatrixF original = model.forward(kTokens);
    auto q = std::make_shared<quant::QuantizedLinear>(
        quant::quantizeRtn(w->layers[0].gate.weight, {.bits = 3, .groupSize = -1}));
    model.overrideLinear(0, "mlp.gate_proj", [q] { return q->effectiveWeight(); });
    const MatrixF quantized = model.forward(kTokens);
    EXPECT_GT((quantized - original).cwiseAbs().maxCoeff(), 1e-3f);
    const MatrixF decoded = q->effectiveWeight();
    model.overrideLinear(0, "mlp.gate_proj", [decoded] { return decoded; });
    EXPECT_EQ(model.forward(kTokens), quantized);
}

// ---------------------------------------------------------------------------------------------
// Checkpoints: HF tensor names, BF16 conversion, tied and untied heads, Qwen3 norms and biases.

float bf16Round(float v) { return io::bf16ToF32(io::f32ToBf16(v)); }

void roundToBf16(MatrixF& m) {
    m = m.unaryExpr([](float v) { return bf16Round(v); }).eval();
}
void roundToBf16(VectorF& v) {
    v = v.unaryExpr([](float x) { return bf16Round(x); }).eval();
}

void addTensor(io::CheckpointWriter& writer, const std::string& name, const MatrixF& m) {
    std::vector<std::int64_t> shape{m.rows(), m.cols()};
    if (m.cols() == 1) shape = {m.rows()};
    writer.addTensorF32(name, io::DType::BF16, shape, std::span<const float>(m.data(), std::size_t(m.size())));
}

fs::path writeCheckpoint(const ModelConfig& c, ModelWeights& w, const fs::path& dir) {
    io::CheckpointWriter writer(dir);
    addTensor(writer, "model.embed_tokens.weight", w.embedding);
    addTensor(writer, "model.norm.weight", w.norm);
    if (w.lmHeadWeight.size()) addTensor(writer, "lm_head.weight", w.lmHeadWeight);
    for (int l = 0; l < c.numLayers; ++l) {
        const LayerWeights& lw = w.layers[std::size_t(l)];
        const std::string p = "model.layers." + std::to_string(l) + ".";
        addTensor(writer, p + "input_layernorm.weight", lw.inputNorm);
        addTensor(writer, p + "post_attention_layernorm.weight", lw.postAttentionNorm);
        addTensor(writer, p + "self_attn.q_norm.weight", lw.qNorm);
        addTensor(writer, p + "self_attn.k_norm.weight", lw.kNorm);
        for (std::string_view module : LayerWeights::kLinearModules) {
            const Linear& lin = lw.linear(module);
            addTensor(writer, p + std::string(module) + ".weight", lin.weight);
            if (lin.bias.size()) addTensor(writer, p + std::string(module) + ".bias", lin.bias);
        }
    }
    writer.setConfig({{"architectures", {"Qwen3ForCausalLM"}},
                      {"model_type", "qwen3"},
                      {"hidden_size", c.hiddenSize},
                      {"intermediate_size", c.intermediateSize},
                      {"num_hidden_layers", c.numLayers},
                      {"num_attention_heads", c.numHeads},
                      {"num_key_value_heads", c.numKvHeads},
                      {"head_dim", c.headDim},
                      {"vocab_size", c.vocabSize},
                      {"max_position_embeddings", c.maxPositionEmbeddings},
                      {"rms_norm_eps", c.rmsNormEps},
                      {"rope_theta", c.ropeTheta},
                      {"attention_bias", true},
                      {"tie_word_embeddings", w.lmHeadWeight.size() == 0},
                      {"torch_dtype", "bfloat16"}});
    return writer.finish();
}

void roundAll(ModelWeights& w) {
    roundToBf16(w.embedding);
    roundToBf16(w.norm);
    if (w.lmHeadWeight.size()) roundToBf16(w.lmHeadWeight);
    for (LayerWeights& lw : w.layers) {
        for (VectorF* v : {&lw.inputNorm, &lw.postAttentionNorm, &lw.qNorm, &lw.kNorm}) roundToBf16(*v);
        for (std::string_view m : LayerWeights::kLinearModules) {
            roundToBf16(lw.linear(m).weight);
            if (lw.linear(m).bias.size()) roundToBf16(lw.linear(m).bias);
        }
    }
}

TEST(CheckpointWeights, Bf16CheckpointRunsLikeTheSameWeightsInMemory) {
    ModelConfig c = smallConfig();
    c.outputBias = true;  // qwen3 with attention_bias: q, k, v and o carry biases
    for (bool tied : {true, false}) {
        SCOPED_TRACE(tied ? "tied" : "untied");
        auto w = randomWeights(c, 21, tied);
        roundAll(*w);
        const fs::path dir = fs::temp_directory_path() /
                             ("qs_test_transformer_" + std::to_string(::getpid()) + (tied ? "_tied" : "_untied"));
        fs::remove_all(dir);
        writeCheckpoint(c, *w, dir);
        Transformer fromDisk = Transformer::fromCheckpoint(io::Checkpoint::open(dir));
        EXPECT_TRUE(fromDisk.config().qkNorm && fromDisk.config().qkvBias && fromDisk.config().outputBias);
        EXPECT_EQ(fromDisk.config().tieWordEmbeddings, tied);
        Transformer inMemory(c, w);
        const MatrixF a = fromDisk.forward(kTokens), b = inMemory.forward(kTokens);
        EXPECT_LT((a - b).cwiseAbs().maxCoeff(), 1e-5f);
        EXPECT_LT(maxAbsDiff(a, forwardRef(c, *w, kTokens)), 1e-3);
        fs::remove_all(dir);
    }
}

TEST(CheckpointWeights, MissingOrMisshapenTensorsAreNamedInTheError) {
    ModelConfig c = smallConfig();
    c.outputBias = true;
    auto w = randomWeights(c, 22, true);
    w->layers[1].up.weight = MatrixF::Zero(c.intermediateSize + 1, c.hiddenSize);
    const fs::path dir = fs::temp_directory_path() / ("qs_test_transformer_bad_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    writeCheckpoint(c, *w, dir);
    try {
        Transformer::fromCheckpoint(io::Checkpoint::open(dir));
        ADD_FAILURE() << "a misshapen up_proj was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("model.layers.1.mlp.up_proj.weight"), std::string::npos) << e.what();
    }
    fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// RoPE

TEST(Rope, ScoresDependOnlyOnTheRelativePosition) {
    ModelConfig c = smallConfig();
    c.headDim = 8;
    const RotaryEmbedding rope(c);
    std::mt19937 rng(1);
    const MatrixF q0 = randomMatrix(rng, 1, 8, 1.0f), k0 = randomMatrix(rng, 1, 8, 1.0f);
    auto score = [&](int pq, int pk) {
        MatrixF q = q0, k = k0;
        rope.apply(q, 1, pq);
        rope.apply(k, 1, pk);
        return q.row(0).dot(k.row(0));
    };
    EXPECT_NEAR(score(7, 3), score(24, 20), 1e-5);
    EXPECT_NEAR(score(0, 0), q0.row(0).dot(k0.row(0)), 1e-6);
    EXPECT_GT(std::abs(score(7, 3) - score(7, 4)), 1e-3);
}

TEST(Rope, PairsElementIWithIPlusHalfHeadDim) {
    ModelConfig c = smallConfig();
    c.headDim = 4;
    c.ropeTheta = 10000.0;
    const RotaryEmbedding rope(c);
    MatrixF x(1, 4);
    x << 1, 0, 0, 0;  // only element 0 set: rotation moves it into element 2 (= 0 + d/2)
    rope.apply(x, 1, 1);
    EXPECT_NEAR(x(0, 0), std::cos(1.0), 1e-6);
    EXPECT_NEAR(x(0, 2), std::sin(1.0), 1e-6);
    EXPECT_FLOAT_EQ(x(0, 1), 0.0f);
    EXPECT_FLOAT_EQ(x(0, 3), 0.0f);
}

TEST(Rope, Llama3AndLinearScalingFollowTransformers) {
    nlohmann::json j = {{"model_type", "llama"},
                        {"hidden_size", 4096},
                        {"intermediate_size", 14336},
                        {"num_hidden_layers", 1},
                        {"num_attention_heads", 32},
                        {"num_key_value_heads", 8},
                        {"vocab_size", 128256},
                        {"rope_theta", 500000.0},
                        {"rope_scaling",
                         {{"rope_type", "llama3"},
                          {"factor", 8.0},
                          {"low_freq_factor", 1.0},
                          {"high_freq_factor", 4.0},
                          {"original_max_position_embeddings", 8192}}}};
    const ModelConfig c = ModelConfig::fromJson(j);
    const RotaryEmbedding rope(c);
    const auto& f = rope.inverseFrequencies();
    ASSERT_EQ(f.size(), 64u);
    auto base = [](int i) { return std::pow(500000.0, -2.0 * i / 128.0); };
    EXPECT_DOUBLE_EQ(f[0], base(0));             // wavelength 2π < 8192/4: unchanged
    EXPECT_DOUBLE_EQ(f[63], base(63) / 8.0);     // wavelength > 8192: divided by the factor
    const double wavelen = 2 * M_PI / base(30);  // 2948: between 2048 and 8192, interpolated
    const double smooth = (8192.0 / wavelen - 1.0) / 3.0;
    EXPECT_NEAR(f[30], (1 - smooth) * base(30) / 8.0 + smooth * base(30), 1e-15);
    EXPECT_LT(f[30], base(30));
    EXPECT_GT(f[30], base(30) / 8.0);

    j["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
    const RotaryEmbedding linearRope(ModelConfig::fromJson(j));
    const auto& g = linearRope.inverseFrequencies();
    EXPECT_DOUBLE_EQ(g[5], base(5) / 4.0);
}

// ---------------------------------------------------------------------------------------------
// ModelConfig

std::string configRefusal(const nlohmann::json& j);

nlohmann::json baseJson(const std::string& type) {
    return {{"model_type", type},     {"hidden_size", 64},        {"intermediate_size", 128},
            {"num_hidden_layers", 2}, {"num_attention_heads", 8}, {"num_key_value_heads", 2},
            {"vocab_size", 100}};
}

// transformers keeps a quoted size as a string, which fails in nn.Linear: refused, naming the key.
TEST(ModelConfig, AQuotedSizeIsRefusedNotReadAsANumber) {
    nlohmann::json j = baseJson("llama");
    j["hidden_size"] = "64";
    EXPECT_THAT(configRefusal(j),
                ::testing::HasSubstr("'hidden_size' is \"64\", a string; transformers needs an integer there"));
    j = baseJson("llama");
    j["head_dim"] = "8";
    EXPECT_THAT(configRefusal(j), ::testing::HasSubstr("'head_dim' is \"8\", a string"));
}

TEST(ModelConfig, FamiliesSetBiasAndNormFlags) {
    const ModelConfig qwen2 = ModelConfig::fromJson(baseJson("qwen2"));
    EXPECT_TRUE(qwen2.qkvBias);
    EXPECT_FALSE(qwen2.outputBias);
    EXPECT_FALSE(qwen2.qkNorm);
    EXPECT_EQ(qwen2.headDim, 8);

    nlohmann::json q3 = baseJson("qwen3");
    q3["head_dim"] = 16;
    q3["tie_word_embeddings"] = true;
    const ModelConfig qwen3 = ModelConfig::fromJson(q3);
    EXPECT_TRUE(qwen3.qkNorm);
    EXPECT_FALSE(qwen3.qkvBias);
    EXPECT_EQ(qwen3.headDim, 16);
    EXPECT_EQ(qwen3.qDim(), 128);
    EXPECT_TRUE(qwen3.tieWordEmbeddings);

    nlohmann::json llama = baseJson("llama");
    llama["attention_bias"] = true;
    const ModelConfig l = ModelConfig::fromJson(llama);
    EXPECT_TRUE(l.qkvBias && l.outputBias);

    nlohmann::json mistral = baseJson("mistral");
    mistral["sliding_window"] = 4096;
    EXPECT_EQ(ModelConfig::fromJson(mistral).slidingWindow, 4096);
    mistral["sliding_window"] = nullptr;
    EXPECT_EQ(ModelConfig::fromJson(mistral).slidingWindow, 0);

    nlohmann::json v5 = baseJson("llama");
    v5["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};
    EXPECT_DOUBLE_EQ(ModelConfig::fromJson(v5).ropeTheta, 1e6);
}

TEST(ModelConfig, RejectsWhatTheForwardPassCannotHonour) {
    nlohmann::json j = baseJson("llama");
    j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};
    EXPECT_THROW(ModelConfig::fromJson(j), Error);
    EXPECT_THROW(ModelConfig::fromJson(baseJson("gpt2")), Error);
    nlohmann::json missing = baseJson("llama");
    missing.erase("vocab_size");
    EXPECT_THROW(ModelConfig::fromJson(missing), Error);
    nlohmann::json badGqa = baseJson("llama");
    badGqa["num_key_value_heads"] = 3;
    EXPECT_THROW(ModelConfig::fromJson(badGqa), Error);
    nlohmann::json gelu = baseJson("llama");
    gelu["hidden_act"] = "gelu";
    EXPECT_THROW(ModelConfig::fromJson(gelu), Error);
    nlohmann::json window = baseJson("qwen2");
    window["use_sliding_window"] = true;
    EXPECT_THROW(ModelConfig::fromJson(window), Error);
}

// ---------------------------------------------------------------------------------------------
// Mixture of experts (Qwen3-MoE, Mixtral)

nlohmann::json qwen3MoeJson() {
    nlohmann::json j = baseJson("qwen3_moe");
    j["num_experts"] = 6;
    j["num_experts_per_tok"] = 2;
    j["moe_intermediate_size"] = 20;
    return j;
}

nlohmann::json mixtralJson() {
    nlohmann::json j = baseJson("mixtral");
    j["num_local_experts"] = 4;
    j["num_experts_per_tok"] = 2;
    return j;
}

// Layer 0 dense (mlp_only_layers), layer 1 sparse: both kinds of layer in one model.
ModelConfig smallMoeConfig(const std::string& type, bool normTopkProb) {
    ModelConfig c = smallConfig();
    c.modelType = type;
    c.qkvBias = false;
    c.qkNorm = type == "qwen3_moe";
    c.moe.numExperts = 5;
    c.moe.numExpertsPerToken = 2;
    c.moe.expertIntermediateSize = 12;
    c.moe.normTopkProb = normTopkProb;
    c.moe.denseLayers = {0};
    c.moe.names = type == "mixtral" ? MoeNames{"block_sparse_moe", "w1", "w3", "w2"}
                                    : MoeNames{"mlp", "gate_proj", "up_proj", "down_proj"};
    return c;
}

TEST(ModelConfig, MoeFamiliesReadTheirExpertKeys) {
    nlohmann::json q = qwen3MoeJson();
    q["norm_topk_prob"] = true;
    q["decoder_sparse_step"] = 2;
    q["mlp_only_layers"] = {0};
    const ModelConfig qwen = ModelConfig::fromJson(q);
    EXPECT_TRUE(qwen.isMoe() && qwen.qkNorm);
    EXPECT_EQ(qwen.moe.numExperts, 6);
    EXPECT_EQ(qwen.moe.numExpertsPerToken, 2);
    EXPECT_EQ(qwen.moe.expertIntermediateSize, 20);
    EXPECT_TRUE(qwen.moe.normTopkProb);
    EXPECT_FALSE(qwen.isMoeLayer(0));  // dense by mlp_only_layers (and by the step)
    EXPECT_TRUE(qwen.isMoeLayer(1));   // (1 + 1) % 2 == 0
    EXPECT_EQ(qwen.moe.names.router(), "mlp.gate");
    EXPECT_EQ(qwen.moe.names.expert(3) + qwen.moe.names.up, "mlp.experts.3.up_proj");
    EXPECT_FALSE(ModelConfig::fromJson(qwen3MoeJson()).moe.normTopkProb);  // Qwen3MoeConfig's default

    const ModelConfig mixtral = ModelConfig::fromJson(mixtralJson());
    EXPECT_TRUE(mixtral.isMoeLayer(0) && mixtral.isMoeLayer(1));
    EXPECT_FALSE(mixtral.qkNorm);
    EXPECT_TRUE(mixtral.moe.normTopkProb);
    EXPECT_EQ(mixtral.moe.expertIntermediateSize, 128);  // Mixtral's experts are intermediate_size wide
    EXPECT_EQ(mixtral.moe.names.expert(0) + mixtral.moe.names.down, "block_sparse_moe.experts.0.w2");
    EXPECT_FALSE(ModelConfig::fromJson(baseJson("qwen3")).isMoe());
}

void expectRefusal(const nlohmann::json& j, const std::string& says) {
    try {
        ModelConfig::fromJson(j);
        ADD_FAILURE() << "accepted: " << j.dump();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
}

TEST(ModelConfig, BrokenMoeConfigsAreRefusedWithTheReason) {
    nlohmann::json topK = qwen3MoeJson();
    topK["num_experts_per_tok"] = 7;
    expectRefusal(topK, "num_experts_per_tok 7 must be between 1 and the 6 experts");
    nlohmann::json noExperts = mixtralJson();
    noExperts.erase("num_local_experts");
    expectRefusal(noExperts, "num_local_experts");
    nlohmann::json noWidth = qwen3MoeJson();
    noWidth.erase("moe_intermediate_size");
    expectRefusal(noWidth, "moe_intermediate_size");
    nlohmann::json badLayer = qwen3MoeJson();
    badLayer["mlp_only_layers"] = {2};
    expectRefusal(badLayer, "mlp_only_layers");
    nlohmann::json step = qwen3MoeJson();
    step["decoder_sparse_step"] = 0;
    expectRefusal(step, "decoder_sparse_step");
    EXPECT_THROW(ModelConfig::fromJson(qwen3MoeJson()).requireDense("config.json", "calibration"), Error);
    EXPECT_NO_THROW(ModelConfig::fromJson(baseJson("qwen3")).requireDense("config.json", "calibration"));
}

TEST(SmallMoe, MatchesBruteForceReferenceForBothFamilies) {
    for (const auto& [type, norm] :
         {std::pair{"qwen3_moe", false}, std::pair{"qwen3_moe", true}, std::pair{"mixtral", true}}) {
        SCOPED_TRACE(std::string(type) + (norm ? " normalised" : " raw"));
        const ModelConfig c = smallMoeConfig(type, norm);
        auto w = randomWeights(c, 31, false);
        Transformer model(c, w);
        EXPECT_LT(maxAbsDiff(model.forward(kTokens), forwardRef(c, *w, kTokens)), 1e-3);
    }
    // Renormalising changes the output: the flag is honoured, not ignored.
    auto w = randomWeights(smallMoeConfig("qwen3_moe", false), 31, false);
    Transformer raw(smallMoeConfig("qwen3_moe", false), w), normalised(smallMoeConfig("qwen3_moe", true), w);
    EXPECT_GT((raw.forward(kTokens) - normalised.forward(kTokens)).cwiseAbs().maxCoeff(), 1e-2f);
}

TEST(SmallMoe, HookSeesEachExpertsRoutedRowsAndTheCachedRunAgrees) {
    const ModelConfig c = smallMoeConfig("mixtral", true);
    auto w = randomWeights(c, 32, false);
    Transformer model(c, w);
    MatrixF hidden = model.embed(kTokens);
    std::map<std::string, Eigen::Index> rows;
    const LinearInputHook hook = [&](const LinearInput& in) {
        std::string names;
        for (auto m : in.modules) names += std::string(m) + ",";
        rows[std::to_string(in.layer) + ":" + names] += in.x.rows();
    };
    for (int i = 0; i < c.numLayers; ++i) model.runLayer(i, hidden, hook);
    EXPECT_EQ(rows["0:mlp.gate_proj,mlp.up_proj,"], Eigen::Index(kTokens.size()));  // layer 0 is dense
    Eigen::Index routed = 0;
    int experts = 0;
    for (int e = 0; e < c.moe.numExperts; ++e) {
        const std::string x = "1:block_sparse_moe.experts." + std::to_string(e) + ".";
        const Eigen::Index n = rows[x + "w1," + x.substr(2) + "w3,"];
        EXPECT_EQ(rows[x + "w2,"], n);
        routed += n;
        experts += n > 0;
    }
    EXPECT_EQ(routed, Eigen::Index(kTokens.size()) * c.moe.numExpertsPerToken);
    EXPECT_GE(experts, 3);  // a random router spreads 11 tokens over more than two experts

    KvCache cache(c, 32);
    MatrixF stepped(Eigen::Index(kTokens.size()), c.vocabSize);
    for (std::size_t t = 0; t < kTokens.size(); ++t)
        stepped.row(Eigen::Index(t)) = model.forward(std::span(&kTokens[t], 1), cache);
    EXPECT_LT((stepped - model.finalLogits(hidden)).cwiseAbs().maxCoeff(), 1e-4f);
}

TEST(SmallMoe, AllExpertHookSeesEveryTokenWhileTheOutputStillRoutes) {
    const ModelConfig c = smallMoeConfig("qwen3_moe", true);
    auto w = randomWeights(c, 35, false);
    Transformer model(c, w);
    const MatrixF reference = model.forward(kTokens);
    for (bool all : {false, true}) {
        SCOPED_TRACE(all ? "all experts" : "routed");
        model.setHookSeesAllExpertTokens(all);
        MatrixF hidden = model.embed(kTokens);
        std::int64_t routed = 0;
        int hooked = 0, blockInputs = 0;
        const LinearInputHook hook = [&](const LinearInput& in) {
            if (!in.routedPerModule.empty()) {  // all experts: the block's input once, for every gate and up
                EXPECT_TRUE(all);
                EXPECT_EQ(in.x.rows(), Eigen::Index(kTokens.size()));
                EXPECT_EQ(in.modules.size(), std::size_t(2 * c.moe.numExperts));
                ASSERT_EQ(in.routedPerModule.size(), in.modules.size());
                for (std::size_t i = 0; i < in.modules.size(); i += 2) routed += in.routedPerModule[i], ++hooked;
                ++blockInputs;
                return;
            }
            if (in.routedTokens < 0) return;  // attention, dense MLP
            EXPECT_EQ(in.x.rows(), all ? Eigen::Index(kTokens.size()) : in.routedTokens);
            if (in.modules.size() == 2) routed += in.routedTokens, ++hooked;  // routed: gate/up once per expert
        };
        for (int i = 0; i < c.numLayers; ++i) model.runLayer(i, hidden, hook);
        EXPECT_EQ(blockInputs, all ? 1 : 0);
        EXPECT_EQ(hooked, c.moe.numExperts);  // even an expert no token chose is reported
        EXPECT_EQ(routed, std::int64_t(kTokens.size()) * c.moe.numExpertsPerToken);
        EXPECT_LT((model.finalLogits(hidden) - reference).cwiseAbs().maxCoeff(), 1e-5f);
    }
}

// Every input a layer shows its hooks, in order (the linear inputs and the keys / values), bit for bit.
struct ShownInputs {
    struct Input {
        std::string modules;  // with each module's routed tokens
        std::int64_t routedTokens;
        MatrixF x;
        bool operator==(const Input&) const = default;
    };
    std::vector<Input> linears;
    std::vector<MatrixF> keysAndValues;
    LinearInputHook hook() {
        return [this](const LinearInput& in) {
            std::string names;
            for (std::size_t i = 0; i < in.modules.size(); ++i)
                names += std::string(in.modules[i]) +
                         (in.routedPerModule.empty() ? "" : ":" + std::to_string(in.routedPerModule[i])) + ",";
            linears.push_back({names, in.routedTokens, in.x});
        };
    }
    KeyValueHook keyValueHook() {
        return [this](const KeyValues& kv) { keysAndValues.push_back(kv.keys), keysAndValues.push_back(kv.values); };
    }
    // The experts whose down projection was shown with routed tokens: the ones the router chose.
    int chosenExperts(const std::string& down) const {
        return int(std::count_if(linears.begin(), linears.end(), [&](const Input& in) {
            return in.routedTokens > 0 && in.modules.ends_with("." + down + ",");
        }));
    }
};

// Observing a layer (calibration's pass over a stream it does not move) shows the hooks what running it
// shows them, and skips the GEMMs whose only reader is the layer's output: the down projections.
TEST(SmallMoe, ObservingALayerShowsTheHooksWhatRunningItDoesWithoutTheDownProjections) {
    struct Case {
        ModelConfig config;
        bool allTokens;
        bool sharedExpert;
    };
    const std::vector<Case> cases{{smallConfig(), false, false},
                                  {smallMoeConfig("qwen3_moe", true), false, false},
                                  {smallMoeConfig("qwen3_moe", true), true, false},
                                  {smallMoeConfig("mixtral", true), true, true},
                                  {smallMoeConfig("mixtral", true), false, true}};
    for (const auto& [c, allTokens, sharedExpert] : cases) {
        SCOPED_TRACE(c.modelType + (allTokens ? ", all tokens" : "") + (sharedExpert ? ", shared expert" : ""));
        auto w = randomWeights(c, 36, false);
        if (sharedExpert) {  // GLM's and DeepSeek's: a dense MLP beside the routed experts
            std::mt19937 rng(37);
            Expert& x = w->layers[1].sharedExpert;
            w->layers[1].moeNames.shared = "shared_experts";
            x.gate.weight = randomMatrix(rng, 10, c.hiddenSize, 0.4f);
            x.up.weight = randomMatrix(rng, 10, c.hiddenSize, 0.4f);
            x.down.weight = randomMatrix(rng, c.hiddenSize, 10, 0.4f);
        }
        Transformer model(c, w);
        model.setHookSeesAllExpertTokens(allTokens);
        auto math = std::make_shared<RecordingMath>();
        model.setLayerMath(math);
        const MatrixF input = model.embed(kTokens);
        for (int layer = 0; layer < c.numLayers; ++layer) {
            SCOPED_TRACE("layer " + std::to_string(layer));
            const LayerWeights& lw = model.layerWeights(layer);
            ShownInputs ran, observed;
            MatrixF hidden = input;
            math->linears = 0;
            model.runLayer(layer, lw, hidden, ran.hook(), ran.keyValueHook());
            const int runLinears = std::exchange(math->linears, 0);
            model.observeLayer(layer, lw, input, observed.hook(), observed.keyValueHook());
            EXPECT_TRUE(observed.linears == ran.linears);
            EXPECT_EQ(observed.keysAndValues, ran.keysAndValues);
            // Skipped: down_proj; in a MoE layer each chosen expert's down (with all tokens shown, its whole
            // routed run: gate, up and down) and the shared expert's down.
            const int chosen = ran.chosenExperts(c.moe.names.down);
            const int skipped = !lw.isMoe() ? 1 : (allTokens ? 3 : 1) * chosen + (sharedExpert ? 1 : 0);
            EXPECT_EQ(math->linears, runLinears - skipped) << chosen << " experts chosen";
            if (lw.isMoe()) {
                EXPECT_GE(chosen, 3);
            }
        }
    }
}

TEST(SmallMoe, ExpertLinearsAreAddressedByTheirCheckpointNames) {
    const ModelConfig c = smallMoeConfig("qwen3_moe", true);
    auto w = randomWeights(c, 33, false);
    LayerWeights& lw = w->layers[1];
    EXPECT_EQ(&lw.linear("mlp.gate"), &lw.router);
    EXPECT_EQ(&lw.linear("mlp.experts.4.down_proj"), &lw.experts[4].down);
    EXPECT_EQ(&lw.linear("mlp.experts.0.gate_proj"), &lw.experts[0].gate);
    EXPECT_THROW(lw.linear("mlp.experts.5.down_proj"), Error);
    EXPECT_THROW(lw.linear("mlp.experts.x.down_proj"), Error);
    EXPECT_THROW(lw.linear("mlp.experts.1.w2"), Error);
}

// A MoE checkpoint in the HF names of `c` (BF16), for the refusal tests.
void writeMoeCheckpoint(const ModelConfig& c, const ModelWeights& w, const fs::path& dir, const nlohmann::json& config,
                        int skipExpert = -1, int extraExpert = -1) {
    io::CheckpointWriter writer(dir);
    addTensor(writer, "model.embed_tokens.weight", w.embedding);
    addTensor(writer, "model.norm.weight", w.norm);
    addTensor(writer, "lm_head.weight", w.lmHeadWeight);
    for (int l = 0; l < c.numLayers; ++l) {
        const LayerWeights& lw = w.layers[std::size_t(l)];
        const std::string p = "model.layers." + std::to_string(l) + ".";
        addTensor(writer, p + "input_layernorm.weight", lw.inputNorm);
        addTensor(writer, p + "post_attention_layernorm.weight", lw.postAttentionNorm);
        if (lw.qNorm.size()) addTensor(writer, p + "self_attn.q_norm.weight", lw.qNorm);
        if (lw.kNorm.size()) addTensor(writer, p + "self_attn.k_norm.weight", lw.kNorm);
        for (std::string_view m : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"})
            addTensor(writer, p + std::string(m) + ".weight", lw.linear(m).weight);
        if (!lw.isMoe()) {
            for (std::string_view m : {"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
                addTensor(writer, p + std::string(m) + ".weight", lw.linear(m).weight);
            continue;
        }
        const MoeNames& n = c.moe.names;
        addTensor(writer, p + n.router() + ".weight", lw.router.weight);
        for (int e = 0; e < c.moe.numExperts; ++e) {
            if (e == skipExpert) continue;
            const Expert& x = lw.experts[std::size_t(e)];
            addTensor(writer, p + n.expert(e) + n.gate + ".weight", x.gate.weight);
            addTensor(writer, p + n.expert(e) + n.up + ".weight", x.up.weight);
            addTensor(writer, p + n.expert(e) + n.down + ".weight", x.down.weight);
        }
        if (extraExpert >= 0)
            addTensor(writer, p + n.expert(extraExpert) + n.gate + ".weight", lw.experts[0].gate.weight);
    }
    writer.setConfig(config);
    writer.finish();
}

nlohmann::json jsonOf(const ModelConfig& c) {
    nlohmann::json j{{"model_type", c.modelType},
                     {"hidden_size", c.hiddenSize},
                     {"intermediate_size", c.intermediateSize},
                     {"num_hidden_layers", c.numLayers},
                     {"num_attention_heads", c.numHeads},
                     {"num_key_value_heads", c.numKvHeads},
                     {"head_dim", c.headDim},
                     {"vocab_size", c.vocabSize},
                     {"max_position_embeddings", c.maxPositionEmbeddings},
                     {"rms_norm_eps", c.rmsNormEps},
                     {"rope_theta", c.ropeTheta},
                     {"num_experts_per_tok", c.moe.numExpertsPerToken}};
    if (c.modelType == "mixtral") {
        j["num_local_experts"] = c.moe.numExperts;
    } else {
        j["num_experts"] = c.moe.numExperts;
        j["moe_intermediate_size"] = c.moe.expertIntermediateSize;
        j["norm_topk_prob"] = c.moe.normTopkProb;
        j["mlp_only_layers"] = c.moe.denseLayers;
    }
    return j;
}

std::string refusalOf(const fs::path& dir) {
    try {
        Transformer::fromCheckpoint(io::Checkpoint::open(dir));
    } catch (const Error& e) {
        return e.what();
    }
    return "(accepted)";
}

TEST(CheckpointWeights, MoeCheckpointRunsLikeTheSameWeightsAndBrokenOnesAreRefused) {
    ModelConfig c = smallMoeConfig("qwen3_moe", true);
    auto w = randomWeights(c, 34, false);
    roundAll(*w);
    for (LayerWeights& lw : w->layers)
        for (Expert& x : lw.experts)
            for (Linear* l : {&x.gate, &x.up, &x.down, &lw.router}) roundToBf16(l->weight);
    const fs::path dir = fs::temp_directory_path() / ("qs_test_moe_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    writeMoeCheckpoint(c, *w, dir, jsonOf(c));
    Transformer fromDisk = Transformer::fromCheckpoint(io::Checkpoint::open(dir));
    EXPECT_TRUE(fromDisk.config().isMoeLayer(1) && !fromDisk.config().isMoeLayer(0));
    EXPECT_LT(maxAbsDiff(fromDisk.forward(kTokens), forwardRef(c, *w, kTokens)), 1e-3);

    nlohmann::json more = jsonOf(c);
    more["num_experts"] = 6;
    fs::remove_all(dir);
    writeMoeCheckpoint(c, *w, dir, more);
    EXPECT_THAT(refusalOf(dir),
                ::testing::HasSubstr("model.layers.1.mlp.gate.weight routes to 5 experts, but the config says 6"));
    fs::remove_all(dir);
    writeMoeCheckpoint(c, *w, dir, jsonOf(c), /*skipExpert=*/3);
    EXPECT_THAT(refusalOf(dir), ::testing::HasSubstr("expert 3 of layer 1 is missing"));
    fs::remove_all(dir);
    writeMoeCheckpoint(c, *w, dir, jsonOf(c), -1, /*extraExpert=*/7);
    EXPECT_THAT(refusalOf(dir),
                ::testing::HasSubstr("model.layers.1.mlp.experts.7.gate_proj.weight is beyond the 5 experts"));
    fs::remove_all(dir);
}

const fs::path kMoeData = fs::path(QS_TEST_DATA_DIR) / "moe";

// The committed tiny checkpoints (scripts/make-tiny-moe.py) load under their HF names and run as the
// brute-force reference runs their weights.
TEST(TinyMoeCheckpoints, LoadUnderTheirHfNamesAndMatchTheReference) {
    for (const char* name : {"qwen3-moe-tiny", "mixtral-tiny"}) {
        SCOPED_TRACE(name);
        const io::Checkpoint checkpoint = io::Checkpoint::open(kMoeData / name);
        const ModelConfig c = ModelConfig::fromCheckpoint(checkpoint);
        EXPECT_EQ(c.moe.numExperts, 4);
        EXPECT_EQ(c.moe.numExpertsPerToken, 2);
        const CheckpointWeights source(checkpoint, c);
        ModelWeights w;
        w.embedding = checkpoint.tensor("model.embed_tokens.weight").toMatrix();
        w.lmHeadWeight = checkpoint.tensor("lm_head.weight").toMatrix();
        w.norm = source.finalNorm();
        for (int l = 0; l < c.numLayers; ++l) w.layers.push_back(source.layer(l));
        ASSERT_EQ(w.layers[1].experts.size(), 4u);
        EXPECT_EQ(
            w.layers[1].experts[2].down.weight,
            checkpoint.tensor("model.layers.1." + c.moe.names.expert(2) + c.moe.names.down + ".weight").toMatrix());
        const std::vector<TokenId> tokens{72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100, 33, 256, 10, 84};
        Transformer model = Transformer::fromCheckpoint(checkpoint);
        EXPECT_LT(maxAbsDiff(model.forward(tokens), forwardRef(c, w, tokens)), 1e-3);
    }
}

// ---------------------------------------------------------------------------------------------
// Gemma 3: the (1 + w) norms, sandwich norms, gelu-tanh, scaled embeddings, query_pre_attn_scalar,
// sliding and global layers with their own RoPE, against the brute-force reference above.

nlohmann::json smallGemmaJson() {
    return {{"model_type", "gemma3_text"},
            {"hidden_size", 16},
            {"intermediate_size", 24},
            {"num_hidden_layers", 3},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 2},
            {"head_dim", 6},
            {"vocab_size", 40},
            {"max_position_embeddings", 64},
            {"rms_norm_eps", 1e-6},
            {"hidden_activation", "gelu_pytorch_tanh"},
            {"query_pre_attn_scalar", 10},
            {"sliding_window", 3},
            {"layer_types", {"sliding_attention", "full_attention", "sliding_attention"}},
            {"rope_theta", 1000.0},
            {"rope_local_base_freq", 100.0},
            {"rope_scaling", {{"rope_type", "linear"}, {"factor", 4.0}}},
            {"final_logit_softcapping", nullptr},
            {"attn_logit_softcapping", nullptr},
            {"torch_dtype", "float32"}};
}

TEST(Gemma3Config, DescribesTheGemmaLayerAsData) {
    const ModelConfig c = ModelConfig::fromJson(smallGemmaJson());
    EXPECT_EQ(c.arch.normOffset, 1.0f);
    EXPECT_EQ(c.arch.inputNorm, "input_layernorm");
    EXPECT_EQ(c.arch.preMlpNorm, "pre_feedforward_layernorm");
    EXPECT_EQ(c.arch.attentionOutputNorm, "post_attention_layernorm");
    EXPECT_EQ(c.arch.mlpOutputNorm, "post_feedforward_layernorm");
    EXPECT_EQ(c.arch.activation, Activation::GeluTanh);
    EXPECT_EQ(c.arch.tensorPrefix, "model.");
    EXPECT_TRUE(c.qkNorm);
    EXPECT_TRUE(c.tieWordEmbeddings);  // Gemma3TextConfig's default
    EXPECT_DOUBLE_EQ(c.embeddingScale, double(float(std::sqrt(16.0))));
    EXPECT_DOUBLE_EQ(c.queryPreAttnScalar, 10.0);
    EXPECT_EQ(c.windowOf(0), 3);
    EXPECT_EQ(c.windowOf(1), 0);
    EXPECT_TRUE(c.usesLocalRope(2));
    EXPECT_FALSE(c.usesLocalRope(1));
    EXPECT_EQ(c.ropeScaling.type, RopeScalingType::Linear);
    EXPECT_DOUBLE_EQ(c.ropeLocalTheta, 100.0);

    // sliding_window_pattern (older configs): every 6th layer global.
    nlohmann::json j = smallGemmaJson();
    j.erase("layer_types");
    j["num_hidden_layers"] = 7;
    j["sliding_window_pattern"] = 6;
    const ModelConfig p = ModelConfig::fromJson(j);
    EXPECT_EQ(p.slidingLayers, (std::vector<bool>{true, true, true, true, true, false, true}));
    // BF16 checkpoints scale by sqrt(hidden) rounded to BF16, as Gemma3TextScaledWordEmbedding does.
    j["torch_dtype"] = "bfloat16";
    j["hidden_size"] = 1152;
    EXPECT_DOUBLE_EQ(ModelConfig::fromJson(j).embeddingScale, 34.0);  // sqrt(1152) = 33.94
}

TEST(Gemma3Config, VlmTextConfigAndTransformers5RopeParameters) {
    nlohmann::json text = smallGemmaJson();
    text.erase("rope_theta");
    text.erase("rope_local_base_freq");
    text.erase("rope_scaling");
    text["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1e6}}},
                               {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
    const ModelConfig c = ModelConfig::fromJson(
        {{"model_type", "gemma3"}, {"text_config", text}, {"vision_config", {{"hidden_size", 8}}}});
    EXPECT_EQ(c.modelType, "gemma3");
    EXPECT_EQ(c.arch.tensorPrefix, "model.language_model.");
    EXPECT_EQ(c.layerPrefix(2), "model.language_model.layers.2.");
    EXPECT_EQ(c.arch.passThroughPrefixes,
              (std::vector<std::string>{"model.vision_tower.", "model.multi_modal_projector."}));
    EXPECT_DOUBLE_EQ(c.ropeTheta, 1e6);
    EXPECT_DOUBLE_EQ(c.ropeScaling.factor, 8.0);
    EXPECT_DOUBLE_EQ(c.ropeLocalTheta, 1e4);
    EXPECT_EQ(c.arch.normOffset, 1.0f);
}

std::string configRefusal(const nlohmann::json& j) {
    try {
        ModelConfig::fromJson(j);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(Gemma3Config, RefusesWhatTheForwardPassDoesNotHonourNamingTheKey) {
    nlohmann::json j = smallGemmaJson();
    j["attn_logit_softcapping"] = 50.0;
    EXPECT_THAT(configRefusal(j), ::testing::HasSubstr("'attn_logit_softcapping' is 50.0"));
    j = smallGemmaJson();
    j["final_logit_softcapping"] = 30.0;
    EXPECT_THAT(configRefusal(j), ::testing::HasSubstr("'final_logit_softcapping'"));
    j = smallGemmaJson();
    j["hidden_activation"] = "relu";
    EXPECT_THAT(configRefusal(j), ::testing::HasSubstr("hidden_activation 'relu'"));
    j = smallGemmaJson();
    j["layer_types"] = {"sliding_attention"};
    EXPECT_THAT(configRefusal(j), ::testing::HasSubstr("'layer_types'"));
    j = smallGemmaJson();
    j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    EXPECT_THAT(configRefusal(j), ::testing::HasSubstr("rope scaling 'yarn'"));
    EXPECT_THAT(configRefusal({{"model_type", "gemma3"}}), ::testing::HasSubstr("'text_config'"));
}

TEST(SmallGemma, MatchesBruteForceReferenceAndEveryGemmaFeatureMatters) {
    const ModelConfig c = ModelConfig::fromJson(smallGemmaJson());
    auto w = randomWeights(c, 23, /*tied=*/true);
    std::vector<TokenId> tokens;
    for (int i = 0; i < 24; ++i) tokens.push_back(TokenId((i * 7 + 3) % 40));  // longer than the window
    Transformer model(c, w);
    const MatrixF logits = model.forward(tokens);
    const MatrixD ref = forwardRef(c, *w, tokens);
    ASSERT_GT(ref.cwiseAbs().maxCoeff(), 1.0);
    EXPECT_LT(maxAbsDiff(logits, ref), 2e-4 * ref.cwiseAbs().maxCoeff());
    // Each of these would be a different model: the reference with the feature changed is far away.
    const auto farFrom = [&](ModelConfig other) { return maxAbsDiff(logits, forwardRef(other, *w, tokens)); };
    ModelConfig noScalar = c;
    noScalar.queryPreAttnScalar = 0.0;  // 1/sqrt(head_dim), as llama.cpp scales
    EXPECT_GT(farFrom(noScalar), 1e-2);
    ModelConfig noOffset = c;
    noOffset.arch.normOffset = 0.0f;
    EXPECT_GT(farFrom(noOffset), 1e-2);
    ModelConfig oneRope = c;
    oneRope.ropeLocalTheta = 0.0;
    EXPECT_GT(farFrom(oneRope), 1e-2);
    ModelConfig allSliding = c;
    allSliding.slidingLayers = {true, true, true};
    EXPECT_GT(farFrom(allSliding), 1e-2);
    ModelConfig silu = c;
    silu.arch.activation = Activation::Silu;
    EXPECT_GT(farFrom(silu), 1e-2);
    ModelConfig unscaled = c;
    unscaled.embeddingScale = 1.0;
    EXPECT_GT(farFrom(unscaled), 1e-2);

    // The KV cache runs each layer with its own window and RoPE, as the full pass does.
    KvCache cache(c, 32);
    const std::span<const TokenId> all(tokens);
    model.forward(all.first(tokens.size() - 1), cache);
    EXPECT_LT((model.forward(all.last(1), cache).row(0) - logits.bottomRows(1)).cwiseAbs().maxCoeff(), 1e-4f);
}

const fs::path kGemmaData = fs::path(QS_TEST_DATA_DIR) / "gemma3";

// Reads the layers of a Gemma checkpoint under its own names into ModelWeights for the reference.
ModelWeights gemmaWeights(const io::Checkpoint& checkpoint, const ModelConfig& c) {
    const CheckpointWeights source(checkpoint, c);
    ModelWeights w;
    w.embedding = checkpoint.tensor(c.arch.tensorPrefix + "embed_tokens.weight").toMatrix();
    w.norm = source.finalNorm();
    for (int l = 0; l < c.numLayers; ++l) w.layers.push_back(source.layer(l));
    return w;
}

// The committed tiny checkpoints (scripts/make-tiny-gemma3.py) load under their HF names (the VLM's text
// tower under model.language_model., and under language_model.model. as transformers 4.4x saved it) and
// run as the reference runs their weights.
TEST(TinyGemma3Checkpoints, LoadUnderTheirHfNamesAndMatchTheReference) {
    const std::vector<TokenId> tokens{72,  101, 108, 108, 111, 44, 32,  119, 111, 114,
                                      108, 100, 33,  256, 10,  84, 104, 101, 32,  113};
    for (const char* name : {"gemma3-text-tiny", "gemma3-vlm-tiny"}) {
        SCOPED_TRACE(name);
        const io::Checkpoint checkpoint = io::Checkpoint::open(kGemmaData / name);
        const ModelConfig c = ModelConfig::fromCheckpoint(checkpoint);
        const ModelWeights w = gemmaWeights(checkpoint, c);
        const LayerWeights& l0 = w.layers[0];
        EXPECT_EQ(l0.attentionOutputNorm,
                  checkpoint.tensor(c.layerPrefix(0) + "post_attention_layernorm.weight").toMatrix().reshaped());
        EXPECT_EQ(l0.postAttentionNorm,
                  checkpoint.tensor(c.layerPrefix(0) + "pre_feedforward_layernorm.weight").toMatrix().reshaped());
        EXPECT_EQ(l0.mlpOutputNorm,
                  checkpoint.tensor(c.layerPrefix(0) + "post_feedforward_layernorm.weight").toMatrix().reshaped());
        Transformer model = Transformer::fromCheckpoint(checkpoint);
        EXPECT_LT(maxAbsDiff(model.forward(tokens), forwardRef(c, w, tokens)), 1e-3);
    }
    // The older VLM layout: the same tensors renamed, the same logits.
    const io::Checkpoint vlm = io::Checkpoint::open(kGemmaData / "gemma3-vlm-tiny");
    const fs::path dir = fs::temp_directory_path() / ("qs_gemma3_old_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    {
        io::CheckpointWriter writer(dir);
        for (const io::CheckpointTensor& t : vlm.tensors()) {
            std::string name = t.info->name;
            for (const auto& [from, to] :
                 {std::pair<std::string, std::string>{"model.language_model.", "language_model.model."},
                  {"model.vision_tower.", "vision_tower."},
                  {"model.multi_modal_projector.", "multi_modal_projector."}})
                if (name.starts_with(from)) name = to + name.substr(from.size());
            const std::vector<float> values = vlm.tensor(t.info->name).toF32();
            writer.addTensorF32(name, io::DType::F32, t.info->shape, values);
        }
        writer.setConfig(vlm.config());
        writer.finish();
    }
    const io::Checkpoint old = io::Checkpoint::open(dir);
    EXPECT_EQ(ModelConfig::fromCheckpoint(old).arch.tensorPrefix, "language_model.model.");
    EXPECT_EQ(Transformer::fromCheckpoint(old).forward(tokens), Transformer::fromCheckpoint(vlm).forward(tokens));
    fs::remove_all(dir);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Vision-language models' text towers: Qwen2.5-VL, Qwen3-VL, Mistral 3 (scripts/make-tiny-vlm.py)

namespace {

// HF's multimodal rotary as transformers computes it, written here from its definition: the angles of
// frequency i come from one of three position rows (temporal, height, width). Qwen2.5-VL
// (apply_multimodal_rotary_pos_emb): cos/sin of cat(freqs, freqs) split into chunks of
// mrope_section * 2, chunk c reading row c % 3. Qwen3-VL (apply_interleaved_mrope): frequency i reads
// row 1 when i % 3 == 1 and i < 3 * section[1], row 2 when i % 3 == 2 and i < 3 * section[2], else row 0.
MatrixF multimodalRopeReference(const MatrixF& x, int heads, int headDim, double theta, const std::vector<int>& section,
                                bool interleaved, const std::array<std::vector<int>, 3>& positions) {
    const int half = headDim / 2;
    std::vector<int> rowOfFrequency(static_cast<std::size_t>(half), 0);
    for (int i = 0; i < half; ++i) {
        if (interleaved) {
            for (int row = 1; row <= 2; ++row)
                if (i % 3 == row && i < 3 * section[static_cast<std::size_t>(row)])
                    rowOfFrequency[static_cast<std::size_t>(i)] = row;
        } else {
            int end = 0;
            for (int c = 0; c < 3; ++c) {
                end += section[static_cast<std::size_t>(c)];
                if (i < end) {
                    rowOfFrequency[static_cast<std::size_t>(i)] = c;
                    break;
                }
            }
        }
    }
    MatrixF out = x;
    for (Eigen::Index t = 0; t < x.rows(); ++t)
        for (int h = 0; h < heads; ++h)
            for (int j = 0; j < headDim; ++j) {
                // cat(freqs, freqs): element j and j + half share frequency j mod half (and, in the blocked
                // layout, the doubled split gives them the same chunk row).
                const int i = j % half;
                const double invFreq = 1.0 / std::pow(theta, 2.0 * i / headDim);
                const double angle = positions[static_cast<std::size_t>(rowOfFrequency[static_cast<std::size_t>(i)])]
                                              [static_cast<std::size_t>(t)] *
                                     invFreq;
                const double v = x(t, h * headDim + j);
                const double rotated = j < half ? -double(x(t, h * headDim + j + half))
                                                : double(x(t, h * headDim + j - half));  // rotate_half
                out(t, h * headDim + j) = static_cast<float>(v * std::cos(angle) + rotated * std::sin(angle));
            }
    return out;
}

nlohmann::json qwenVlJson(const std::string& type, int headDim, const std::vector<int>& section, bool interleaved) {
    nlohmann::json text = {{"hidden_size", 2 * headDim},
                           {"intermediate_size", 64},
                           {"num_hidden_layers", 1},
                           {"num_attention_heads", 2},
                           {"num_key_value_heads", 1},
                           {"head_dim", headDim},
                           {"vocab_size", 100},
                           {"rope_theta", 1e6},
                           {"rope_scaling", {{"rope_type", "default"}, {"mrope_section", section}}}};
    if (interleaved) text["rope_scaling"]["mrope_interleaved"] = true;
    return {{"model_type", type}, {"text_config", text}};
}

}  // namespace

// For a text token get_rope_index gives the three position rows the same id, so HF's multimodal rotary
// (both layouts, the real models' sections) is the plain RoPE our text tower applies; with rows that
// differ (an image's height / width ids) the reference departs from it, so the comparison can fail.
TEST(QwenVlRope, TextPositionsMakeTheMultimodalRotaryPlainRope) {
    struct Case {
        const char* type;
        std::vector<int> section;
        bool interleaved;
    };
    for (const Case& k : {Case{"qwen2_5_vl", {16, 24, 24}, false}, Case{"qwen3_vl", {24, 20, 20}, true},
                          Case{"qwen2_5_vl", {2, 3, 3}, false}, Case{"qwen3_vl", {2, 3, 3}, true}}) {
        const int headDim = 2 * (k.section[0] + k.section[1] + k.section[2]);
        SCOPED_TRACE(std::string(k.type) + " head_dim " + std::to_string(headDim));
        const ModelConfig c = ModelConfig::fromJson(qwenVlJson(k.type, headDim, k.section, k.interleaved));
        EXPECT_EQ(c.mropeSection, k.section);
        EXPECT_EQ(c.mropeInterleaved, k.interleaved);
        EXPECT_EQ(c.ropeScaling.type, RopeScalingType::None);
        std::mt19937 rng(7);
        const int first = 1000, count = 40;
        const MatrixF x = randomMatrix(rng, count, 2 * headDim, 1.0f);
        std::array<std::vector<int>, 3> positions;
        for (auto& row : positions)
            for (int t = 0; t < count; ++t) row.push_back(first + t);
        MatrixF ours = x;
        RotaryEmbedding(c).apply(ours, 2, first);
        EXPECT_LT(
            maxAbsDiff(ours, multimodalRopeReference(x, 2, headDim, c.ropeTheta, k.section, k.interleaved, positions)
                                 .cast<double>()),
            1e-4);
        for (int& p : positions[1]) p += 7;  // an image patch's height id
        EXPECT_GT(
            maxAbsDiff(ours, multimodalRopeReference(x, 2, headDim, c.ropeTheta, k.section, k.interleaved, positions)
                                 .cast<double>()),
            1e-2);
    }
}

TEST(VlmConfig, ReadsEachTextTowerInBothConfigLayouts) {
    // Qwen2.5-VL before transformers 4.52: the text fields at the top, rope_scaling type "mrope".
    nlohmann::json old = qwenVlJson("qwen2_5_vl", 16, {2, 3, 3}, false)["text_config"];
    old["model_type"] = "qwen2_5_vl";
    old["rope_scaling"] = {{"type", "mrope"}, {"mrope_section", {2, 3, 3}}};
    old["vision_config"] = {{"depth", 1}};
    const ModelConfig o = ModelConfig::fromJson(old);
    EXPECT_EQ(o.modelType, "qwen2_5_vl");
    EXPECT_TRUE(o.qkvBias);  // Qwen2's q/k/v biases
    EXPECT_FALSE(o.outputBias);
    EXPECT_FALSE(o.qkNorm);
    EXPECT_EQ(o.arch.tensorPrefix, "model.language_model.");  // fromCheckpoint finds model.layers. (tested below)
    EXPECT_EQ(o.ropeScaling.type, RopeScalingType::None);
    EXPECT_DOUBLE_EQ(o.ropeTheta, 1e6);

    // Qwen3-VL under transformers 5's rope_parameters; its deepstack count from the vision config.
    nlohmann::json q3 = qwenVlJson("qwen3_vl", 16, {2, 3, 3}, true);
    q3["text_config"]["rope_parameters"] = q3["text_config"]["rope_scaling"];
    q3["text_config"]["rope_parameters"]["rope_theta"] = 5e6;
    q3["text_config"].erase("rope_scaling");
    q3["text_config"]["model_type"] = "qwen3_vl_text";
    q3["vision_config"] = {{"deepstack_visual_indexes", {8, 16, 24}}};
    q3["tie_word_embeddings"] = true;
    const ModelConfig c3 = ModelConfig::fromJson(q3);
    EXPECT_TRUE(c3.qkNorm);
    EXPECT_FALSE(c3.qkvBias);
    EXPECT_TRUE(c3.tieWordEmbeddings);
    EXPECT_DOUBLE_EQ(c3.ropeTheta, 5e6);
    EXPECT_EQ(c3.deepstackLayers, 3);
    EXPECT_TRUE(c3.mropeInterleaved);

    // Mistral 3: text_config of model_type mistral.
    nlohmann::json m = baseJson("mistral");
    m["head_dim"] = 16;
    m["sliding_window"] = nullptr;
    const ModelConfig c = ModelConfig::fromJson(
        {{"model_type", "mistral3"}, {"text_config", m}, {"vision_config", {{"model_type", "pixtral"}}}});
    EXPECT_EQ(c.modelType, "mistral3");
    EXPECT_EQ(c.headDim, 16);
    EXPECT_EQ(c.slidingWindow, 0);
    EXPECT_EQ(c.arch.passThroughPrefixes,
              (std::vector<std::string>{"model.vision_tower.", "model.multi_modal_projector."}));
}

TEST(VlmConfig, RefusesWhatItDoesNotRunInOneLine) {
    EXPECT_THAT(configRefusal({{"model_type", "qwen3_vl_moe"}}), ::testing::HasSubstr("experts are stored stacked"));
    EXPECT_THAT(configRefusal({{"model_type", "mistral3"}}), ::testing::HasSubstr("needs a 'text_config' object"));
    // mRoPE only where the architecture defines it.
    nlohmann::json plain = baseJson("qwen2");
    plain["rope_scaling"] = {{"type", "mrope"}, {"mrope_section", {2, 3, 3}}};
    EXPECT_THAT(configRefusal(plain), ::testing::HasSubstr("multimodal RoPE"));
    plain["rope_scaling"] = {{"rope_type", "default"}, {"mrope_section", {2, 3, 3}}};
    EXPECT_THAT(configRefusal(plain), ::testing::HasSubstr("multimodal RoPE"));
    EXPECT_THAT(configRefusal(qwenVlJson("qwen2_5_vl", 16, {2, 3, 4}, false)),
                ::testing::HasSubstr("sums to 9, not head_dim / 2 = 8"));
    nlohmann::json wrongText = qwenVlJson("qwen2_5_vl", 16, {2, 3, 3}, false);
    wrongText["text_config"]["model_type"] = "llama";
    EXPECT_THAT(configRefusal(wrongText), ::testing::HasSubstr("text_config.model_type 'llama'"));
    nlohmann::json yarn = qwenVlJson("qwen3_vl", 16, {2, 3, 3}, true);
    yarn["text_config"]["rope_scaling"]["rope_type"] = "yarn";
    EXPECT_THAT(configRefusal(yarn), ::testing::HasSubstr("rope scaling 'yarn' is not supported"));
}

namespace {

const fs::path kVlmData = fs::path(QS_TEST_DATA_DIR) / "vlm";

// Reads the text tower of a checkpoint under its own names into ModelWeights for the reference.
ModelWeights towerWeights(const io::Checkpoint& checkpoint, const ModelConfig& c) {
    const CheckpointWeights source(checkpoint, c);
    ModelWeights w;
    w.embedding = checkpoint.tensor(c.arch.tensorPrefix + "embed_tokens.weight").toMatrix();
    w.norm = source.finalNorm();
    if (!c.tieWordEmbeddings) w.lmHeadWeight = checkpoint.tensor(c.arch.lmHead).toMatrix();
    for (int l = 0; l < c.numLayers; ++l) w.layers.push_back(source.layer(l));
    return w;
}

}  // namespace

// The committed tiny VLMs load their text tower under the names of their layout and run as the
// reference runs those weights; the old layouts hold the same weights as the new and give the same logits.
TEST(TinyVlmCheckpoints, LoadTheTextTowerInBothLayoutsAndMatchTheReference) {
    const std::vector<TokenId> tokens{72,  101, 108, 108, 111, 44, 32,  119, 111, 114,
                                      108, 100, 33,  256, 10,  84, 104, 101, 32,  113};
    struct Case {
        const char* name;
        const char* prefix;
        const char* lmHead;
        const char* twin;  // the same weights in the other layout
    };
    for (const Case& k :
         {Case{"qwen2_5-vl-tiny", "model.language_model.", "lm_head.weight", "qwen2_5-vl-old-tiny"},
          Case{"qwen2_5-vl-old-tiny", "model.", "lm_head.weight", nullptr},
          Case{"qwen3-vl-tiny", "model.language_model.", "", nullptr},
          Case{"mistral3-tiny", "model.language_model.", "lm_head.weight", "mistral3-old-tiny"},
          Case{"mistral3-old-tiny", "language_model.model.", "language_model.lm_head.weight", nullptr}}) {
        SCOPED_TRACE(k.name);
        const io::Checkpoint checkpoint = io::Checkpoint::open(kVlmData / k.name);
        const ModelConfig c = ModelConfig::fromCheckpoint(checkpoint);
        EXPECT_EQ(c.arch.tensorPrefix, k.prefix);
        if (*k.lmHead) {
            EXPECT_EQ(c.arch.lmHead, k.lmHead);
        }
        EXPECT_EQ(c.tieWordEmbeddings, *k.lmHead == '\0');
        Transformer model = Transformer::fromCheckpoint(checkpoint);
        const MatrixF logits = model.forward(tokens);
        EXPECT_LT(maxAbsDiff(logits, forwardRef(c, towerWeights(checkpoint, c), tokens)), 1e-3);
        if (k.twin) {
            EXPECT_EQ(Transformer::fromCheckpoint(io::Checkpoint::open(kVlmData / k.twin)).forward(tokens), logits);
        }
    }
}
