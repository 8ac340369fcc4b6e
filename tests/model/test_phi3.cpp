// Phi-3 / Phi-4 (model_type phi3): the fused projections split as they are read, the config's
// partial rotary factor, LongRoPE and sliding window, and our RoPE against transformers' formulas
// (_compute_longrope_parameters, Phi3's apply_rotary_pos_emb) written out here.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/model_config.h"
#include "qs/model/rope.h"

using namespace qs;
using namespace qs::model;

namespace {

namespace fs = std::filesystem;
const fs::path kPhi3 = fs::path(QS_TEST_DATA_DIR) / "phi3" / "tiny-random";
const fs::path kLongRope = fs::path(QS_TEST_DATA_DIR) / "phi3" / "tiny-random-longrope";

std::string refusal(const nlohmann::json& config) {
    try {
        (void)ModelConfig::fromJson(config, "config.json");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// transformers' longrope inv_freq and attention factor, as _compute_longrope_parameters computes them
// for a forward call that reaches position seqLen - 1 (the long factors beyond the original context).
struct HfLongRope {
    std::vector<double> invFreq;
    double attentionFactor;
};

HfLongRope hfLongRope(const nlohmann::json& c, int seqLen) {
    const double base = c.at("rope_theta").get<double>();
    const int headDim = c.at("hidden_size").get<int>() / c.at("num_attention_heads").get<int>();
    const int dim = static_cast<int>(headDim * c.value("partial_rotary_factor", 1.0));
    const auto& s = c.at("rope_scaling");
    const int original = c.at("original_max_position_embeddings").get<int>();
    const double factor = c.at("max_position_embeddings").get<double>() / original;
    const double attention = factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(double(original)));
    const auto ext = (seqLen > original ? s.at("long_factor") : s.at("short_factor")).get<std::vector<double>>();
    HfLongRope r{{}, attention};
    for (int i = 0; i < dim / 2; ++i)
        r.invFreq.push_back(1.0 / (ext[std::size_t(i)] * std::pow(base, double(2 * i) / dim)));
    return r;
}

// Phi3's apply_rotary_pos_emb on one head: the first rotary dims by rotate_half with cos/sin times the
// attention factor, the rest passed through.
std::vector<float> hfRotate(const std::vector<float>& head, const HfLongRope& rope, int position) {
    const std::size_t half = rope.invFreq.size();
    std::vector<float> out = head;
    for (std::size_t i = 0; i < 2 * half; ++i) {
        const double freq = rope.invFreq[i % half];  // emb = cat(freqs, freqs)
        const double c = std::cos(position * freq) * rope.attentionFactor,
                     s = std::sin(position * freq) * rope.attentionFactor;
        const double rotated = i < half ? -head[i + half] : head[i - half];
        out[i] = static_cast<float>(head[i] * c + rotated * s);
    }
    return out;
}

nlohmann::json configOf(const fs::path& dir) { return io::Checkpoint::open(dir).config(); }

}  // namespace

TEST(Phi3Config, ReadsFusedProjectionsWindowPartialRotaryAndLongRope) {
    const ModelConfig plain = ModelConfig::fromJson(configOf(kPhi3));
    EXPECT_EQ(plain.arch.fusedQkv, "self_attn.qkv_proj");
    EXPECT_EQ(plain.arch.fusedGateUp, "mlp.gate_up_proj");
    EXPECT_EQ(plain.slidingWindow, 2047);
    EXPECT_EQ(plain.rotaryDims(), 16);
    EXPECT_EQ(plain.ropeScaling.type, RopeScalingType::None);
    ASSERT_EQ(plain.fusedProjections().size(), 2u);
    EXPECT_EQ(plain.fusedProjections()[0].parts[1], (std::pair<std::string, int>{"self_attn.k_proj", 32}));

    const ModelConfig longRope = ModelConfig::fromJson(configOf(kLongRope));
    EXPECT_EQ(longRope.rotaryDim, 12);
    EXPECT_EQ(longRope.ropeScaling.type, RopeScalingType::LongRope);
    EXPECT_EQ(longRope.ropeScaling.originalMaxPositionEmbeddings, 256);
    EXPECT_DOUBLE_EQ(longRope.ropeScaling.attentionFactor, std::sqrt(1.0 + std::log(32.0) / std::log(256.0)));
    EXPECT_EQ(longRope.ropeScaling.longFactor.size(), 6u);
    EXPECT_TRUE(longRope.tieWordEmbeddings);
}

TEST(Phi3Config, RefusesWhatItCannotRunInOneLine) {
    nlohmann::json c = configOf(kLongRope);
    c["rope_scaling"]["short_factor"] = {1.0, 2.0};
    EXPECT_NE(refusal(c).find("short_factor must list 6 numbers"), std::string::npos) << refusal(c);
    c = configOf(kLongRope);
    c["partial_rotary_factor"] = 0.1;  // int(16 * 0.1) = 1 rotary dimension
    EXPECT_NE(refusal(c).find("partial_rotary_factor"), std::string::npos) << refusal(c);
    c = configOf(kPhi3);
    c["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};  // YaRN is read (gpt-oss), but not for phi3
    EXPECT_NE(refusal(c).find("model_type 'phi3' takes default or longrope RoPE only"), std::string::npos)
        << refusal(c);
    c = configOf(kPhi3);
    c["model_type"] = "llama";
    c["rope_scaling"] = configOf(kLongRope)["rope_scaling"];
    EXPECT_NE(refusal(c).find("longrope is supported for model_type 'phi3' only"), std::string::npos) << refusal(c);
}

// q, k, v are the rows of qkv_proj in that order; gate, up those of gate_up_proj (Phi3MLP's chunk(2)).
TEST(Phi3Weights, FusedProjectionsAreSplitIntoTheSevenLinears) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(kPhi3);
    const ModelConfig config = ModelConfig::fromCheckpoint(checkpoint);
    const CheckpointWeights weights(checkpoint, config);
    const LayerWeights w = weights.layer(2);
    const MatrixF qkv = checkpoint.tensor("model.layers.2.self_attn.qkv_proj.weight").toMatrix();
    const MatrixF gateUp = checkpoint.tensor("model.layers.2.mlp.gate_up_proj.weight").toMatrix();
    ASSERT_EQ(qkv.rows(), 64 + 2 * 32);
    EXPECT_EQ(w.q.weight, qkv.topRows(64));
    EXPECT_EQ(w.k.weight, qkv.middleRows(64, 32));
    EXPECT_EQ(w.v.weight, qkv.bottomRows(32));
    EXPECT_EQ(w.gate.weight, gateUp.topRows(96));
    EXPECT_EQ(w.up.weight, gateUp.bottomRows(96));
    EXPECT_EQ(w.down.weight, checkpoint.tensor("model.layers.2.mlp.down_proj.weight").toMatrix());
}

// Our rotary embedding against transformers' formulas, for a call within the original context (short
// factors) and one beyond it (long factors): partial rotation, the factors and the attention factor.
TEST(Phi3Rope, LongRopeAndPartialRotaryMatchTransformersFormulas) {
    const nlohmann::json json = configOf(kLongRope);
    const ModelConfig config = ModelConfig::fromJson(json);
    const RotaryEmbedding rope(config);
    const int heads = 2, headDim = config.headDim;
    for (const int length : {200, 300}) {
        SCOPED_TRACE(length);
        const HfLongRope hf = hfLongRope(json, length);
        const auto& ours = rope.inverseFrequencies(length);
        ASSERT_EQ(ours.size(), hf.invFreq.size());
        for (std::size_t i = 0; i < ours.size(); ++i) EXPECT_NEAR(ours[i], hf.invFreq[i], 1e-15 * hf.invFreq[i]);
        MatrixF x(length, heads * headDim);
        for (Eigen::Index r = 0; r < x.rows(); ++r)
            for (Eigen::Index c = 0; c < x.cols(); ++c)
                x(r, c) = static_cast<float>(std::sin(0.37 * double(r) + 1.3 * double(c)));
        MatrixF rotated = x;
        rope.apply(rotated, heads, 0);
        double worst = 0.0;
        for (int t : {0, 1, 57, 199, length - 1})
            for (int h = 0; h < heads; ++h) {
                std::vector<float> head(x.row(t).data() + h * headDim, x.row(t).data() + (h + 1) * headDim);
                const std::vector<float> want = hfRotate(head, hf, t);
                for (int i = 0; i < headDim; ++i)
                    worst = std::max(worst, double(std::abs(rotated(t, h * headDim + i) - want[std::size_t(i)])));
                for (int i = config.rotaryDims(); i < headDim; ++i)
                    EXPECT_EQ(rotated(t, h * headDim + i), head[std::size_t(i)]);
            }
        EXPECT_LT(worst, 2e-6);
    }
    // The two calls differ: short factors below the original context, long beyond it.
    EXPECT_NE(rope.inverseFrequencies(256), rope.inverseFrequencies(257));
    EXPECT_GT(rope.attentionFactor(), 1.27);
}
