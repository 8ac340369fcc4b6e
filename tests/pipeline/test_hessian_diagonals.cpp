// pipeline::hessianDiagonals on the bundled demo Qwen3 against the diagonal of the full Hessian that
// calibration accumulates (LayerStatistics over quant::HessianAccumulator, run here layer by layer
// as the Hessian tab used to): the same numbers to 1e-6 relative, without a full H ever being made,
// with the forward passes and the sums on the chosen backend.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "qs/error.h"
#include "qs/model/layer_weights.h"
#include "qs/model/tokenizer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/hessian_diagonals.h"
#include "qs/pipeline/layer_statistics.h"

#include "counting_math.h"
#include "delegating_backend.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

const std::filesystem::path kDemo = std::filesystem::path(QS_RESOURCES_DIR) / "demo";

TokenSequences demoText(int samples, int length) {
    const auto tokenizer = model::Tokenizer::fromFile(kDemo);
    return tokenWindows(tokenizer, loadTexts(kDemo / "calibration.txt"), samples, length, "calibration.txt");
}

// The reference: every linear's full H = 2 XᵀX / n as calibration computes it, then its diagonal.
std::map<std::string, std::vector<double>> fullHessianDiagonals(const io::Checkpoint& checkpoint, int layer,
                                                                const TokenSequences& text, std::int64_t& samples) {
    model::Transformer transformer = model::Transformer::fromCheckpoint(checkpoint);
    LayerStatistics statistics;
    std::vector<MatrixF> hidden;
    for (const auto& tokens : text) hidden.push_back(transformer.embed(tokens));
    for (int l = 0; l <= layer; ++l)
        for (MatrixF& h : hidden) transformer.runLayer(l, h, l == layer ? statistics.hook() : model::LinearInputHook());
    std::map<std::string, std::vector<double>> diagonals;
    for (auto module : model::LayerWeights::kLinearModules) {
        const MatrixF& h = statistics.hessian(module);
        std::vector<double> d(static_cast<std::size_t>(h.rows()));
        for (Eigen::Index c = 0; c < h.rows(); ++c) d[static_cast<std::size_t>(c)] = h(c, c);
        diagonals.emplace(module, std::move(d));
        samples = statistics.input(module).hessian->samples();
    }
    return diagonals;
}

// A backend that counts its diagonal sinks and the forward passes' linears, and has no full Hessian.
class DiagonalOnlyBackend final : public test::DelegatingBackend {
public:
    std::unique_ptr<HessianSink> hessian(std::int64_t) const override { throw Error("a full Hessian was asked for"); }
    std::unique_ptr<DiagonalSink> hessianDiagonal(std::int64_t features) const override {
        widths.push_back(features);
        return DelegatingBackend::hessianDiagonal(features);
    }
    std::shared_ptr<const model::LayerMath> layerMath() const override { return math; }

    std::shared_ptr<test::CountingMath> math = std::make_shared<test::CountingMath>();
    mutable std::vector<std::int64_t> widths;
};

class HessianDiagonals : public ::testing::TestWithParam<int> {};

TEST_P(HessianDiagonals, AgreeWithTheFullHessiansDiagonalOnTheDemo) {
    const int layer = GetParam();
    const io::Checkpoint checkpoint = io::Checkpoint::open(kDemo);
    const TokenSequences text = demoText(6, 96);
    std::int64_t referenceSamples = 0;
    const auto reference = fullHessianDiagonals(checkpoint, layer, text, referenceSamples);
    std::vector<Progress> reports;
    const LayerHessianDiagonals result = hessianDiagonals(
        checkpoint, layer, text, *makeCpuBackend(), [&](const Progress& p) { reports.push_back(p); }, CancelToken{});
    EXPECT_EQ(result.layer, layer);
    EXPECT_EQ(result.samples, 6 * 96);
    EXPECT_EQ(result.samples, referenceSamples);
    ASSERT_EQ(result.modules.size(), 7u);
    // The reference sums each sequence's 96 rows in f32 (quant::HessianAccumulator's chunk GEMM) and
    // rounds H to f32: a few 1e-7 per channel; the diagonal alone sums exact squares in f64.
    double worst = 0.0;
    for (const auto& [module, expected] : reference) {
        const HessianDiagonal& got = result.modules.at(module);
        ASSERT_EQ(got.diagonal.size(), expected.size()) << module;
        double difference = 0.0, norm = 0.0;
        for (std::size_t c = 0; c < expected.size(); ++c) {
            ASSERT_GT(expected[c], 0.0) << module << " channel " << c;
            worst = std::max(worst, std::abs(got.diagonal[c] - expected[c]) / expected[c]);
            difference += (got.diagonal[c] - expected[c]) * (got.diagonal[c] - expected[c]);
            norm += expected[c] * expected[c];
        }
        EXPECT_LT(std::sqrt(difference / norm), 1e-6) << module;
        EXPECT_EQ(got.actOrderRank, actOrderRanks(got.diagonal)) << module;
    }
    EXPECT_LT(worst, 2e-6);
    std::ostringstream worstText;
    worstText << worst;
    RecordProperty("worst_relative_difference", worstText.str());
    // down_proj reads the 768 intermediate channels; q/k/v the 256 hidden ones, as one input.
    EXPECT_EQ(result.modules.at("mlp.down_proj").diagonal.size(), 768u);
    EXPECT_EQ(result.modules.at("self_attn.q_proj").diagonal, result.modules.at("self_attn.v_proj").diagonal);
    EXPECT_NE(result.modules.at("self_attn.q_proj").diagonal, result.modules.at("self_attn.o_proj").diagonal);
    ASSERT_EQ(reports.size(), static_cast<std::size_t>(layer + 2));
    EXPECT_EQ(reports.back().fraction, 1.0);
}

INSTANTIATE_TEST_SUITE_P(EachLayer, HessianDiagonals, ::testing::Values(0, 1));

TEST(HessianDiagonalsOnABackend, RunTheForwardPassesAndTheSumsThereWithoutAFullHessian) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(kDemo);
    DiagonalOnlyBackend backend;
    const LayerHessianDiagonals result = hessianDiagonals(checkpoint, 1, demoText(3, 64), backend, {}, CancelToken{});
    EXPECT_EQ(result.modules.size(), 7u);
    // The layer's four distinct inputs: the normed hidden states (q/k/v, and gate/up), attention, MLP.
    std::sort(backend.widths.begin(), backend.widths.end());
    EXPECT_EQ(backend.widths, (std::vector<std::int64_t>{256, 256, 256, 768}));
    // Both layers' seven linears over three sequences went through the backend's GEMMs.
    EXPECT_GE(backend.math->linears.load(), 2 * 7 * 3);
    EXPECT_EQ(backend.math->live.load(), 0) << "a residency scope outlived its layer";
}

// A mixture of experts (the bundled tiny Qwen3-MoE, 4 experts, top 2): the diagonals of the full
// Hessians the Job's default all-expert calibration accumulates (every expert's linears on every token,
// the layers routing as the model does), with each expert's routed tokens as that calibration counts them.
TEST(HessianDiagonalsOfAMixtureOfExperts, AreTheAllExpertCalibrationsDiagonalsWithEachExpertsRoutedTokens) {
    const io::Checkpoint checkpoint =
        io::Checkpoint::open(std::filesystem::path(QS_TEST_DATA_DIR) / "moe" / "qwen3-moe-tiny");
    TokenSequences text(4, std::vector<model::TokenId>(48));
    for (std::size_t s = 0; s < text.size(); ++s)
        for (std::size_t t = 0; t < text[s].size(); ++t) text[s][t] = model::TokenId((s * 131 + t * 17 + t * t) % 320);
    const int layer = 1;

    model::Transformer transformer = model::Transformer::fromCheckpoint(checkpoint);
    transformer.setHookSeesAllExpertTokens(true);
    LayerStatistics statistics;
    for (const auto& tokens : text) {
        MatrixF h = transformer.embed(tokens);
        for (int l = 0; l <= layer; ++l)
            transformer.runLayer(l, h, l == layer ? statistics.hook() : model::LinearInputHook());
    }

    const LayerHessianDiagonals result =
        hessianDiagonals(checkpoint, layer, text, *makeCpuBackend(), {}, CancelToken{});
    EXPECT_EQ(result.samples, 4 * 48);
    ASSERT_EQ(result.modules.size(), 4u + 4u * 3u)
        << "attention's four and every expert's three; the router is not quantized";
    std::int64_t routedDown = 0;
    for (const auto& [module, got] : result.modules) {
        SCOPED_TRACE(module);
        const MatrixF& full = statistics.hessian(module);
        ASSERT_EQ(got.diagonal.size(), std::size_t(full.rows()));
        for (Eigen::Index c = 0; c < full.rows(); ++c)
            EXPECT_NEAR(got.diagonal[std::size_t(c)], full(c, c), 2e-6 * std::abs(full(c, c))) << "channel " << c;
        const bool expert = module.starts_with("mlp.experts.");
        EXPECT_EQ(got.routedTokens, expert ? statistics.routedTokens(module) : -1);
        if (expert) {
            EXPECT_GE(got.routedTokens, 0);
        }
        if (module.ends_with("down_proj") && expert) routedDown += got.routedTokens;
    }
    EXPECT_EQ(routedDown, 4 * 48 * 2) << "each token goes to its top 2 experts";
    EXPECT_EQ(result.modules.at("mlp.experts.0.gate_proj").diagonal,
              result.modules.at("mlp.experts.3.up_proj").diagonal)
        << "every expert's gate/up read the block's input";
    EXPECT_NE(result.modules.at("mlp.experts.0.down_proj").diagonal,
              result.modules.at("mlp.experts.1.down_proj").diagonal);
}

TEST(HessianDiagonalsErrors, ALayerThatIsNotThereOrACancelStops) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(kDemo);
    const TokenSequences text = demoText(2, 32);
    const auto cpu = makeCpuBackend();
    try {
        hessianDiagonals(checkpoint, 2, text, *cpu, {}, CancelToken{});
        FAIL() << "layer 2 of a 2-layer model";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("layer 2 is not a decoder layer (it has 2, 0 to 1)"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW(hessianDiagonals(checkpoint, 0, {}, *cpu, {}, CancelToken{}), Error);
    CancelToken cancel;
    cancel.cancel();
    EXPECT_THROW(hessianDiagonals(checkpoint, 1, text, *cpu, {}, cancel), Cancelled);
}

TEST(ActOrderRanks, LargestFirstAndTiesInChannelOrder) {
    EXPECT_EQ(actOrderRanks({1.0, 3.0, 3.0, 0.5}), (std::vector<int>{2, 0, 1, 3}));
    EXPECT_TRUE(actOrderRanks({}).empty());
}

TEST(DiagonalSink, IsTwiceTheMeanSquarePerChannel) {
    MatrixF x(3, 2);
    x << 1, -2, 3, 0, -5, 0.5f;
    auto sink = makeCpuBackend()->hessianDiagonal(2);
    EXPECT_THROW(sink->finalize(), Error);
    sink->add(x.topRows(1));
    sink->add(x.bottomRows(2));
    EXPECT_EQ(sink->samples(), 3);
    const VectorD d = sink->finalize();
    EXPECT_DOUBLE_EQ(d(0), 2.0 * (1 + 9 + 25) / 3.0);
    EXPECT_DOUBLE_EQ(d(1), 2.0 * (4 + 0 + 0.25) / 3.0);
    EXPECT_THROW(sink->add(MatrixF::Ones(1, 3)), Error);
}

}  // namespace
