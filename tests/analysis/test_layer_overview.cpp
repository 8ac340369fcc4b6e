#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "qs/analysis/layer_overview.h"
#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/matrix.h"

namespace qs::analysis {
namespace {

const char* const kStories = QS_RESOURCES_DIR "/models/stories260K";

io::TensorView f32View(io::TensorInfo& info, const std::vector<float>& values) {
    info.name = std::string("w");  // not = "w": GCC 12 -O3 warns falsely (-Wrestrict) on that assign
    info.dtype = io::DType::F32;
    info.shape = {static_cast<std::int64_t>(values.size())};
    info.end = values.size() * sizeof(float);
    return io::TensorView(info, std::as_bytes(std::span(values)));
}

TEST(WeightStats, MatchesBruteForceMoments) {
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(100'000);  // two chunks
    for (float& v : values) v = normal(rng);
    for (int i = 0; i < 7; ++i) values[static_cast<std::size_t>(i) * 9000] = 30.0f;  // heavy tail

    io::TensorInfo info;
    const WeightStats w = computeWeightStats(f32View(info, values), 6.0);

    double mean = 0, m2 = 0, m4 = 0, maxAbs = 0;
    for (const float v : values) mean += v;
    mean /= static_cast<double>(values.size());
    for (const float v : values) {
        const double d = v - mean;
        m2 += d * d;
        m4 += d * d * d * d;
        maxAbs = std::max(maxAbs, std::abs(static_cast<double>(v)));
    }
    const double n = static_cast<double>(values.size());
    const double sigma = std::sqrt(m2 / n);
    std::int64_t outliers = 0;
    for (const float v : values) outliers += std::abs(v - mean) > 6.0 * sigma;

    EXPECT_EQ(w.count, 100'000);
    EXPECT_NEAR(w.mean, mean, 1e-12);
    EXPECT_NEAR(w.stddev, sigma, 1e-9);
    EXPECT_EQ(w.maxAbs, 30.0);
    EXPECT_NEAR(w.kurtosis, m4 / n / (sigma * sigma * sigma * sigma) - 3.0, 1e-6);
    EXPECT_GT(w.kurtosis, 1.0);  // the planted tail makes it far from Gaussian
    EXPECT_EQ(outliers, 7);
    EXPECT_DOUBLE_EQ(w.outlierFraction, 7.0 / n);
    EXPECT_EQ(w.value(LayerStatistic::MaxAbs), 30.0);
    EXPECT_EQ(w.value(LayerStatistic::OutlierFraction), w.outlierFraction);
}

TEST(WeightStats, ConstantTensorHasNoTail) {
    const std::vector<float> values(10, 2.0f);
    io::TensorInfo info;
    const WeightStats w = computeWeightStats(f32View(info, values));
    EXPECT_EQ(w.stddev, 0.0);
    EXPECT_EQ(w.kurtosis, 0.0);
    EXPECT_EQ(w.outlierFraction, 0.0);
    EXPECT_EQ(w.maxAbs, 2.0);
}

TEST(ModuleRank, AttentionBeforeMlpBeforeNorms) {
    const char* const ordered[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                   "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj",    "input_layernorm"};
    for (std::size_t i = 0; i + 1 < std::size(ordered); ++i) {
        EXPECT_LT(moduleRank(ordered[i]), moduleRank(ordered[i + 1])) << ordered[i];
    }
    EXPECT_LT(moduleRank("input_layernorm"), moduleRank("mystery"));
}

TEST(LayerOverview, CoversEveryLinearOfStories260K) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(kStories);
    std::vector<qs::Progress> reports;
    LayerOverviewOptions options;
    options.progress = [&](const qs::Progress& p) { reports.push_back(p); };
    const LayerOverview overview = computeLayerOverview(checkpoint, options);

    EXPECT_EQ(overview.layers, (std::vector<int>{0, 1, 2, 3, 4}));
    EXPECT_EQ(overview.modules,
              (std::vector<std::string>{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                        "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}));
    ASSERT_EQ(reports.size(), 36u);  // one per tensor, then "done"
    EXPECT_EQ(reports.front().steps, 35);
    EXPECT_EQ(reports.back().fraction, 1.0);

    for (std::size_t row = 0; row < overview.layers.size(); ++row) {
        for (std::size_t col = 0; col < overview.modules.size(); ++col) {
            const WeightStats* cell = overview.cell(row, col);
            ASSERT_NE(cell, nullptr);
            const std::string name =
                "model.layers." + std::to_string(overview.layers[row]) + "." + overview.modules[col] + ".weight";
            EXPECT_EQ(cell->tensor, name);
            const std::vector<float> values = checkpoint.tensor(name).toF32();
            double mean = 0, m2 = 0;
            for (const float v : values) mean += v;
            mean /= static_cast<double>(values.size());
            for (const float v : values) m2 += (v - mean) * (v - mean);
            EXPECT_NEAR(cell->stddev, std::sqrt(m2 / static_cast<double>(values.size())), 1e-9) << name;
            EXPECT_EQ(cell->count, static_cast<std::int64_t>(values.size()));
        }
    }
}

// A vision-language model: the decoder's linears only, each cell the text tower's tensor (the vision
// tower's layers have q_proj's, fc1's and out_proj's of their own).
TEST(LayerOverview, LeavesAVisionTowerOut) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(std::string(QS_TEST_DATA_DIR) + "/gemma3/gemma3-vlm-tiny");
    const LayerOverview overview = computeLayerOverview(checkpoint, {});
    EXPECT_EQ(overview.layers, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(overview.modules.size(), 7u);
    for (std::size_t row = 0; row < overview.layers.size(); ++row)
        for (std::size_t col = 0; col < overview.modules.size(); ++col) {
            const WeightStats* cell = overview.cell(row, col);
            ASSERT_NE(cell, nullptr);
            EXPECT_TRUE(cell->tensor.starts_with("model.language_model.layers.")) << cell->tensor;
        }
}

// What the caller skips is neither read nor given a column (the GUI leaves a MoE's experts to a view of
// their own): the MLP left out, attention as before.
TEST(LayerOverview, SkipsWhatTheCallerLeavesOut) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(kStories);
    LayerOverviewOptions options;
    int reports = 0;
    options.progress = [&](const qs::Progress&) { ++reports; };
    options.skip = [](const io::CheckpointTensor& t) { return t.naming.module.starts_with("mlp."); };
    const LayerOverview overview = computeLayerOverview(checkpoint, options);
    EXPECT_EQ(overview.modules, (std::vector<std::string>{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                                          "self_attn.o_proj"}));
    EXPECT_EQ(overview.layers.size(), 5u);
    EXPECT_EQ(reports, 5 * 4 + 1);  // one per attention tensor, then "done"
}

// A quantized checkpoint's codes are shown as the weights the caller's hook decodes them to: here
// every q_proj "decodes" to its stored weight times 3 plus 1, so the cell's moments must be the
// transformed ones (σ three times the stored, mean shifted by one), and the other modules unchanged.
TEST(LayerOverview, ShowsQuantizedCodesAsTheirDecodedWeights) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(kStories);
    LayerOverviewOptions options;
    int decoded = 0;
    options.quantized.isCodes = [](const io::CheckpointTensor& t) {
        return t.naming.module == "self_attn.q_proj" && t.naming.part == "weight";
    };
    options.quantized.decode = [&](const io::CheckpointTensor& t) {
        ++decoded;
        MatrixF w = checkpoint.tensor(t.info->name).toMatrix();
        return MatrixF((w.array() * 3.0f + 1.0f).matrix());
    };
    const LayerOverview overview = computeLayerOverview(checkpoint, options);
    const LayerOverview stored = computeLayerOverview(checkpoint, {});
    ASSERT_EQ(overview.modules, stored.modules);
    EXPECT_EQ(decoded, 5);
    for (std::size_t row = 0; row < overview.layers.size(); ++row) {
        const WeightStats& q = *overview.cell(row, 0);
        const WeightStats& plain = *stored.cell(row, 0);
        EXPECT_EQ(q.tensor, plain.tensor);
        EXPECT_EQ(q.count, plain.count);
        EXPECT_NEAR(q.stddev, 3.0 * plain.stddev, 1e-6 * plain.stddev);
        EXPECT_NEAR(q.mean, 3.0 * plain.mean + 1.0, 1e-6);
        EXPECT_NEAR(q.kurtosis, plain.kurtosis, 1e-4);  // invariant under an affine map
        EXPECT_EQ(overview.cell(row, 1)->stddev, stored.cell(row, 1)->stddev);
    }
}

TEST(LayerOverview, CancelThrows) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(kStories);
    LayerOverviewOptions options;
    options.cancel.cancel();
    EXPECT_THROW(computeLayerOverview(checkpoint, options), Cancelled);
}

}  // namespace
}  // namespace qs::analysis
