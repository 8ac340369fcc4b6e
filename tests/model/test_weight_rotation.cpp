// --rotate's folding (weight_rotation.h): a rotated dense model computes the original's logits (KL <= 1e-5 in
// f32) for every family that opts in, on random models whose norms are far from 1 and on the two trained
// checkpoints; leaving the norms unfolded (the negative control) does not.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/rotated_linear.h"
#include "qs/model/rotated_weights.h"
#include "qs/model/transformer.h"
#include "qs/quant/rtn.h"

namespace qs::model {
namespace {

namespace fs = std::filesystem;

MatrixF randomMatrix(std::mt19937& rng, Eigen::Index rows, Eigen::Index cols, float scale) {
    std::normal_distribution<float> n(0.0f, scale);
    MatrixF m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
    return m;
}

// Norm weights from 0.3 to 1.7: folding them wrongly shows.
VectorF randomNorm(std::mt19937& rng, int n) {
    std::uniform_real_distribution<float> u(0.3f, 1.7f);
    VectorF v(n);
    for (int i = 0; i < n; ++i) v[i] = u(rng);
    return v;
}

Linear randomLinear(std::mt19937& rng, int out, int in, bool bias) {
    Linear l;
    l.weight = randomMatrix(rng, out, in, 1.0f / std::sqrt(static_cast<float>(in)));
    if (bias) l.bias = randomMatrix(rng, out, 1, 0.3f);
    return l;
}

std::shared_ptr<ModelWeights> randomWeights(const ModelConfig& c, unsigned seed) {
    std::mt19937 rng(seed);
    auto w = std::make_shared<ModelWeights>();
    const int h = c.hiddenSize;
    w->embedding = randomMatrix(rng, c.vocabSize, h, 1.0f);
    for (int l = 0; l < c.numLayers; ++l) {
        LayerWeights lw;
        lw.inputNorm = randomNorm(rng, h);
        lw.postAttentionNorm = randomNorm(rng, h);
        if (c.qkNorm) {
            lw.qNorm = randomNorm(rng, c.headDim);
            lw.kNorm = randomNorm(rng, c.headDim);
        }
        lw.q = randomLinear(rng, c.qDim(), h, c.qkvBias);
        lw.k = randomLinear(rng, c.kvDim(), h, c.qkvBias);
        lw.v = randomLinear(rng, c.kvDim(), h, c.qkvBias);
        lw.o = randomLinear(rng, h, c.qDim(), c.outputBias);
        if (c.isMoeLayer(l)) {
            const int ff = c.moe.expertIntermediateSize;
            lw.moeNames = c.moe.names;
            lw.router = randomLinear(rng, c.moe.numExperts, h, false);
            for (int e = 0; e < c.moe.numExperts; ++e)
                lw.experts.push_back(Expert{.gate = randomLinear(rng, ff, h, false),
                                            .up = randomLinear(rng, ff, h, false),
                                            .down = randomLinear(rng, h, ff, false)});
        } else {
            lw.gate = randomLinear(rng, c.intermediateSize, h, c.mlpBias);
            lw.up = randomLinear(rng, c.intermediateSize, h, c.mlpBias);
            lw.down = randomLinear(rng, h, c.intermediateSize, c.mlpBias);
        }
        w->layers.push_back(std::move(lw));
    }
    w->norm = randomNorm(rng, h);
    if (!c.tieWordEmbeddings) w->lmHeadWeight = randomMatrix(rng, c.vocabSize, h, 1.0f);
    return w;
}

// Mean over positions of KL(original || rotated), in double.
double meanKl(const MatrixF& original, const MatrixF& rotated) {
    double total = 0.0;
    for (Eigen::Index t = 0; t < original.rows(); ++t) {
        const Eigen::VectorXd a = original.row(t).transpose().cast<double>();
        const Eigen::VectorXd b = rotated.row(t).transpose().cast<double>();
        const Eigen::VectorXd la = a.array() - (std::log((a.array() - a.maxCoeff()).exp().sum()) + a.maxCoeff());
        const Eigen::VectorXd lb = b.array() - (std::log((b.array() - b.maxCoeff()).exp().sum()) + b.maxCoeff());
        total += (la.array().exp() * (la - lb).array()).sum();
    }
    return total / static_cast<double>(original.rows());
}

std::vector<TokenId> someTokens(int vocab, int count) {
    std::vector<TokenId> tokens;
    for (int i = 0; i < count; ++i) tokens.push_back(static_cast<TokenId>((i * 7919 + 13) % vocab));
    return tokens;
}

double rotatedKl(const ModelConfig& c, std::shared_ptr<const WeightSource> original, std::uint64_t seed,
                 WeightRotation::Options options = {}) {
    const std::vector<TokenId> tokens = someTokens(c.vocabSize, 12);
    Transformer base(c, original);
    Transformer rotated(c, std::make_shared<RotatedWeights>(original, WeightRotation(c, seed, options)));
    return meanKl(base.forward(tokens), rotated.forward(tokens));
}

struct FamilyCase {
    const char* name;
    nlohmann::json config;
};

nlohmann::json baseConfig(const char* type, const char* hfClass, int hidden, int heads, int kvHeads, int headDim) {
    return {{"model_type", type},
            {"architectures", {hfClass}},
            {"hidden_size", hidden},
            {"intermediate_size", 36},
            {"num_hidden_layers", 2},
            {"num_attention_heads", heads},
            {"num_key_value_heads", kvHeads},
            {"head_dim", headDim},
            {"vocab_size", 50},
            {"max_position_embeddings", 64},
            {"rms_norm_eps", 1e-6},
            {"rope_theta", 100.0},
            {"tie_word_embeddings", false}};
}

// Hidden sizes 24 = 12·2, 40 = 20·2, 56 = 28·2 (Paley), 32; head_dims 6 and 10 (block-diagonal), 8, 12 (Paley).
std::vector<FamilyCase> familyCases() {
    std::vector<FamilyCase> cases;
    nlohmann::json llama = baseConfig("llama", "LlamaForCausalLM", 24, 4, 2, 6);
    llama["attention_bias"] = true;  // q/k/v and o biases: o's is rotated, v's per head
    llama["mlp_bias"] = true;
    llama["tie_word_embeddings"] = true;  // the rotated lm_head reads the tied embedding through its own input
    cases.push_back({"llama", llama});
    cases.push_back({"mistral", baseConfig("mistral", "MistralForCausalLM", 40, 4, 4, 10)});
    cases.push_back({"qwen2", baseConfig("qwen2", "Qwen2ForCausalLM", 56, 4, 2, 8)});   // q/k/v biases always
    cases.push_back({"qwen3", baseConfig("qwen3", "Qwen3ForCausalLM", 48, 2, 1, 12)});  // q/k norms stay
    nlohmann::json moe = baseConfig("qwen3_moe", "Qwen3MoeForCausalLM", 20, 4, 2, 4);
    moe["num_experts"] = 4;
    moe["num_experts_per_tok"] = 2;
    moe["moe_intermediate_size"] = 12;
    moe["norm_topk_prob"] = true;
    moe["mlp_only_layers"] = {0};  // a dense layer beside a sparse one
    cases.push_back({"qwen3_moe", moe});
    nlohmann::json mixtral = baseConfig("mixtral", "MixtralForCausalLM", 32, 4, 2, 8);
    mixtral["num_local_experts"] = 4;
    mixtral["num_experts_per_tok"] = 2;
    cases.push_back({"mixtral", mixtral});
    return cases;
}

TEST(WeightRotation, RotatedModelOfEveryFamilyComputesTheOriginalsLogits) {
    for (const FamilyCase& f : familyCases()) {
        const ModelConfig c = ModelConfig::fromJson(f.config);
        ASSERT_EQ(rotationRefusal(c), "") << f.name;
        const auto weights = randomWeights(c, 5);
        EXPECT_LE(rotatedKl(c, weights, 42), 1e-5) << f.name;
        EXPECT_LE(rotatedKl(c, weights, 43), 1e-5) << f.name;
        // Negative control: the linears rotated but the norms' weights left in the norms.
        EXPECT_GT(rotatedKl(c, weights, 42, {.foldNorms = false}), 1e-3) << f.name;
    }
}

TEST(WeightRotation, RotationChangesTheLinearsAndMakesTheNormsIdentities) {
    const ModelConfig c = ModelConfig::fromJson(familyCases()[3].config);  // qwen3
    const auto weights = randomWeights(c, 9);
    const RotatedWeights rotated(weights, WeightRotation(c, 1));
    const LayerWeights w = rotated.layer(1);
    EXPECT_TRUE((w.inputNorm.array() == 1.0f).all());
    EXPECT_TRUE((w.postAttentionNorm.array() == 1.0f).all());
    EXPECT_TRUE((rotated.finalNorm().array() == 1.0f).all());
    EXPECT_TRUE(w.qNorm == weights->layers[1].qNorm);  // per head, on q's output: left where it acts
    EXPECT_GT((w.q.weight - weights->layers[1].q.weight).cwiseAbs().maxCoeff(), 0.1f);
    // An orthogonal rotation keeps every row's norm of a writer's transpose: o_proj's Frobenius norm.
    EXPECT_NEAR(w.o.weight.norm(), weights->layers[1].o.weight.norm(), 1e-4f * w.o.weight.norm());
}

TEST(WeightRotation, TrainedCheckpointsComputeTheirLogitsRotated) {
    for (const fs::path& dir :
         {fs::path(QS_RESOURCES_DIR) / "demo", fs::path(QS_RESOURCES_DIR) / "models/stories260K"}) {
        const io::Checkpoint checkpoint = io::Checkpoint::open(dir);
        const ModelConfig c = ModelConfig::fromCheckpoint(checkpoint);
        const auto weights = std::make_shared<CheckpointWeights>(checkpoint, c);
        EXPECT_LE(rotatedKl(c, weights, 0), 1e-5) << dir;
        EXPECT_GT(rotatedKl(c, weights, 0, {.foldNorms = false}), 1e-3) << dir;
    }
}

TEST(WeightRotation, MoeCheckpointsComputeTheirLogitsRotated) {
    for (const char* name : {"qwen3-moe-tiny", "mixtral-tiny"}) {
        const io::Checkpoint checkpoint = io::Checkpoint::open(fs::path(QS_TEST_DATA_DIR) / "moe" / name);
        const ModelConfig c = ModelConfig::fromCheckpoint(checkpoint);
        EXPECT_LE(rotatedKl(c, std::make_shared<CheckpointWeights>(checkpoint, c), 7), 1e-5) << name;
    }
}

TEST(WeightRotation, FamiliesThatCannotFoldAreRefusedInOneLine) {
    const struct {
        const char* dir;
        const char* why;
    } refused[] = {{"gemma3/gemma3-text-tiny", "sandwich norms"},
                   {"moe/deepseek-v3-tiny", "latent attention"},
                   {"qwen35/qwen35-tiny", "per-head rotation"},
                   {"phi3/tiny-random", "fused projections"},
                   {"gptoss/gptoss-tiny", "plain SwiGLU experts"}};
    for (const auto& r : refused) {
        const ModelConfig c = ModelConfig::fromCheckpoint(io::Checkpoint::open(fs::path(QS_TEST_DATA_DIR) / r.dir));
        const std::string refusal = rotationRefusal(c);
        EXPECT_NE(refusal.find(r.why), std::string::npos) << r.dir << ": " << refusal;
        EXPECT_EQ(refusal.find('\n'), std::string::npos);
        EXPECT_THROW(WeightRotation(c, 0), Error) << r.dir;
    }
}

TEST(WeightRotation, OneLinearIsReadRotatedAsTheRunQuantizesIt) {
    const io::Checkpoint demo = io::Checkpoint::open(fs::path(QS_RESOURCES_DIR) / "demo");
    const ModelConfig c = ModelConfig::fromCheckpoint(demo);
    const auto original = std::make_shared<CheckpointWeights>(demo, c);
    const RotatedWeights rotated(original, WeightRotation(c, 3));
    const MatrixF up = rotatedLinearWeight(demo, "model.layers.1.mlp.up_proj.weight", 3);
    EXPECT_TRUE(up == rotated.layer(1).up.weight);
    // W diag(g) Q: the rotation keeps the folded weight's Frobenius norm.
    const LayerWeights plain = original->layer(1);
    const MatrixF folded = plain.up.weight * plain.postAttentionNorm.asDiagonal();
    EXPECT_NEAR(up.norm(), folded.norm(), 1e-4 * folded.norm());
    EXPECT_THROW((void)rotatedLinearWeight(demo, "model.norm.weight", 3), Error);
    EXPECT_THROW((void)rotatedLinearWeight(demo, "model.layers.1.input_layernorm.weight", 3), Error);
    const io::Checkpoint gemma = io::Checkpoint::open(fs::path(QS_TEST_DATA_DIR) / "gemma3" / "gemma3-text-tiny");
    EXPECT_THROW((void)rotatedLinearWeight(gemma, "model.layers.0.self_attn.q_proj.weight", 3), Error);
}

// The model of another source with some residual channels' norm weights divided by `s` and the columns of the
// linears that read them multiplied by `s`: the same function, with outlier input channels in its linears (what
// trained LLMs have and the two small checkpoints do not).
struct OutlierChannels final : WeightSource {
    std::shared_ptr<const WeightSource> inner;
    std::vector<int> channels;
    float s = 30.0f;

    LayerWeights layer(int index) const override {
        LayerWeights w = inner->layer(index);
        for (int j : channels) {
            w.inputNorm[j] /= s;
            w.postAttentionNorm[j] /= s;
            for (Linear* l : {&w.q, &w.k, &w.v, &w.gate, &w.up}) l->weight.col(j) *= s;
        }
        return w;
    }
    MatrixF embeddingRows(std::span<const TokenId> tokens) const override { return inner->embeddingRows(tokens); }
    VectorF finalNorm() const override { return inner->finalNorm(); }
    MatrixF lmHead(const MatrixF& x, const LayerMath& math) const override { return inner->lmHead(x, math); }
};

// Another source's model with every decoder linear replaced by its RTN int4 (group 64) weight.
struct RtnLinears final : WeightSource {
    std::shared_ptr<const WeightSource> inner;

    LayerWeights layer(int index) const override {
        LayerWeights w = inner->layer(index);
        for (const std::string& module : w.linearModules())
            w.linear(module).weight = quant::quantizeRtn(w.linear(module).weight, {.groupSize = 64}).effectiveWeight();
        return w;
    }
    MatrixF embeddingRows(std::span<const TokenId> tokens) const override { return inner->embeddingRows(tokens); }
    VectorF finalNorm() const override { return inner->finalNorm(); }
    MatrixF lmHead(const MatrixF& x, const LayerMath& math) const override { return inner->lmHead(x, math); }
};

// What the rotation is for: outlier input channels made by moving scale from a norm into its linears cost plain
// RTN dearly, while the rotated model folds the norm back in and quantizes the same weights as without them.
TEST(WeightRotation, FoldingAndRotatingTakeTheOutlierChannelsRtnSuffersFrom) {
    const io::Checkpoint demo = io::Checkpoint::open(fs::path(QS_RESOURCES_DIR) / "demo");
    const ModelConfig c = ModelConfig::fromCheckpoint(demo);
    const auto original = std::make_shared<CheckpointWeights>(demo, c);
    auto outliers = std::make_shared<OutlierChannels>();
    outliers->inner = original;
    outliers->channels = {3, 77, 201};
    const std::vector<TokenId> tokens = someTokens(c.vocabSize, 48);
    const MatrixF reference = Transformer(c, original).forward(tokens);
    EXPECT_LE(meanKl(reference, Transformer(c, outliers).forward(tokens)), 1e-6);  // the same model
    const auto rtnKl = [&](std::shared_ptr<const WeightSource> source) {
        auto rtn = std::make_shared<RtnLinears>();
        rtn->inner = std::move(source);
        return meanKl(reference, Transformer(c, rtn).forward(tokens));
    };
    const double plain = rtnKl(original), plainOutliers = rtnKl(outliers);
    const double rotated = rtnKl(std::make_shared<RotatedWeights>(original, WeightRotation(c, 0)));
    const double rotatedOutliers = rtnKl(std::make_shared<RotatedWeights>(outliers, WeightRotation(c, 0)));
    std::printf("[ figures  ] rtn4 g64 mean KLD: plain %.5g, with outliers %.5g; rotated %.5g, with outliers %.5g\n",
                plain, plainOutliers, rotated, rotatedOutliers);
    EXPECT_GT(plainOutliers, 3.0 * plain);                  // the outliers hurt plain RTN
    EXPECT_NEAR(rotatedOutliers, rotated, 0.05 * rotated);  // folded back: the same weights quantized
    EXPECT_LT(rotatedOutliers, 0.5 * plainOutliers);
}

}  // namespace
}  // namespace qs::model
