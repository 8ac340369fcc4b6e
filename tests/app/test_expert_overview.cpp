// The Overview's layer × expert view on the tiny MoE checkpoints: which expert linears it offers, which
// tensor each cell is (Qwen3-MoE's and Mixtral's own expert weights, gpt-oss's stacked BF16 tensors and
// their MXFP4 export), statistics checked against a brute-force computation over each expert's values
// read here, and clicks that select the right tensor in the window (the Overview's cells and the Results'
// tokens-per-expert heat map on gpt-oss).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMouseEvent>
#include <QTemporaryDir>

#include "qs/formats/linear_reader.h"
#include "qs/pipeline/gpt_oss_mxfp4_export.h"

#include "experts/expert_overview.h"
#include "experts/expert_overview_layout.h"
#include "jobs/quantize_job.h"
#include "pages/overview_page.h"
#include "pages/results_page.h"
#include "panels/quantize_panel.h"
#include "plot_click.h"
#include "plots/expert_heat_map.h"
#include "plots/plot_view.h"
#include "qt_test_support.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

const QString kQwen3Moe = QStringLiteral(QS_TEST_DATA_DIR "/moe/qwen3-moe-tiny");
const QString kMixtral = QStringLiteral(QS_TEST_DATA_DIR "/moe/mixtral-tiny");
const QString kGptOss = QStringLiteral(QS_TEST_DATA_DIR "/gptoss/gptoss-tiny");

io::Checkpoint open(const QString& folder) { return io::Checkpoint::open(folder.toStdString()); }

int configInt(const QString& folder, const char* key) {
    QFile file(folder + QStringLiteral("/config.json"));
    EXPECT_TRUE(file.open(QIODevice::ReadOnly)) << folder.toStdString();
    return QJsonDocument::fromJson(file.readAll()).object().value(QLatin1String(key)).toInt();
}

std::vector<std::string> linearNames(const std::vector<ExpertLinear>& linears) {
    std::vector<std::string> names;
    for (const ExpertLinear& l : linears) names.push_back(l.container + ":" + l.linear);
    return names;
}

// Mean, population σ, max|w|, excess kurtosis and the fraction beyond 6σ, the textbook way.
struct Moments {
    double mean = 0, stddev = 0, maxAbs = 0, kurtosis = 0, outliers = 0;
};

Moments bruteMoments(const std::vector<float>& values) {
    Moments m;
    const double n = static_cast<double>(values.size());
    for (const float v : values) m.mean += v / n;
    double m2 = 0, m4 = 0;
    for (const float v : values) {
        const double d = v - m.mean;
        m2 += d * d / n;
        m4 += d * d * d * d / n;
        m.maxAbs = std::max(m.maxAbs, std::abs(static_cast<double>(v)));
    }
    m.stddev = std::sqrt(m2);
    m.kurtosis = m4 / (m2 * m2) - 3.0;
    for (const float v : values) m.outliers += std::abs(v - m.mean) > 6.0 * m.stddev ? 1.0 / n : 0.0;
    return m;
}

void expectStats(const analysis::WeightStats* cell, const std::vector<float>& values, const std::string& where) {
    ASSERT_NE(cell, nullptr) << where;
    const Moments m = bruteMoments(values);
    EXPECT_EQ(cell->count, static_cast<std::int64_t>(values.size())) << where;
    EXPECT_NEAR(cell->stddev, m.stddev, 1e-9 * m.stddev) << where;
    EXPECT_EQ(cell->maxAbs, m.maxAbs) << where;
    EXPECT_NEAR(cell->kurtosis, m.kurtosis, 1e-7) << where;
    EXPECT_NEAR(cell->outlierFraction, m.outliers, 1e-12) << where;
}

// Expert e's [in, out] slice of a stacked [E, in, out] tensor, read here from the whole tensor.
std::vector<float> stackedSlice(const io::Checkpoint& checkpoint, const std::string& tensor, int expert) {
    const std::vector<float> all = checkpoint.tensor(tensor).toF32();
    const std::size_t per = all.size() / static_cast<std::size_t>(checkpoint.tensor(tensor).shape()[0]);
    return {all.begin() + static_cast<std::ptrdiff_t>(per * static_cast<std::size_t>(expert)),
            all.begin() + static_cast<std::ptrdiff_t>(per * static_cast<std::size_t>(expert + 1))};
}

std::string layerName(int layer, const std::string& rest) {
    return "model.layers." + std::to_string(layer) + "." + rest;
}

TEST(ExpertOverviewLayoutTest, Qwen3MoeCellsAreTheExpertsOwnWeights) {
    const io::Checkpoint checkpoint = open(kQwen3Moe);
    const int layers = configInt(kQwen3Moe, "num_hidden_layers");
    const int experts = configInt(kQwen3Moe, "num_experts");
    const std::vector<ExpertLinear> linears = expertLinears(checkpoint);
    EXPECT_EQ(linearNames(linears),
              (std::vector<std::string>{"mlp.experts:gate_proj", "mlp.experts:up_proj", "mlp.experts:down_proj"}));
    for (const ExpertLinear& linear : linears) {
        const ExpertLayout layout = expertLayout(checkpoint, linear);
        ASSERT_EQ(layout.layers.size(), static_cast<std::size_t>(layers));
        EXPECT_EQ(layout.experts, experts);
        ASSERT_EQ(layout.cells.size(), static_cast<std::size_t>(layers * experts));
        for (int l = 0; l < layers; ++l)
            for (int e = 0; e < experts; ++e) {
                const ExpertCell& cell = layout.cells[static_cast<std::size_t>(l * experts + e)];
                EXPECT_EQ(cell.layer, l);
                EXPECT_EQ(cell.expert, e);
                EXPECT_EQ(cell.source, ExpertSource::Tensor);
                EXPECT_EQ(cell.tensor,
                          layerName(l, "mlp.experts." + std::to_string(e) + "." + linear.linear + ".weight"));
            }
    }
    // The router and attention are not experts.
    EXPECT_FALSE(isExpertWeight(*checkpoint.find("model.layers.0.mlp.gate.weight")));
    EXPECT_FALSE(isExpertWeight(*checkpoint.find("model.layers.0.self_attn.q_proj.weight")));
    EXPECT_TRUE(isExpertWeight(*checkpoint.find("model.layers.1.mlp.experts.3.down_proj.weight")));
    EXPECT_EQ(expertWeightTensor(checkpoint, 1, "mlp.experts.2.up_proj"), layerName(1, "mlp.experts.2.up_proj.weight"));
    EXPECT_EQ(expertWeightTensor(checkpoint, 1, "mlp.experts." + std::to_string(experts) + ".up_proj"), std::nullopt);
    EXPECT_EQ(expertWeightTensor(checkpoint, 0, "self_attn.q_proj"), std::nullopt);
}

TEST(ExpertOverviewLayoutTest, MixtralExpertsAreW1W3W2OfTheSparseBlock) {
    const io::Checkpoint checkpoint = open(kMixtral);
    EXPECT_EQ(linearNames(expertLinears(checkpoint)),
              (std::vector<std::string>{"block_sparse_moe.experts:w1", "block_sparse_moe.experts:w3",
                                        "block_sparse_moe.experts:w2"}));
    const ExpertLayout layout = expertLayout(checkpoint, {"block_sparse_moe.experts", "w2"});
    EXPECT_EQ(layout.experts, configInt(kMixtral, "num_local_experts"));
    EXPECT_EQ(layout.cells.back().tensor,
              layerName(layout.layers.back(),
                        "block_sparse_moe.experts." + std::to_string(layout.experts - 1) + ".w2.weight"));
}

TEST(ExpertOverviewLayoutTest, ADenseCheckpointHasNoExperts) {
    const io::Checkpoint checkpoint = open(kStories);
    EXPECT_TRUE(expertLinears(checkpoint).empty());
    for (const io::CheckpointTensor& t : checkpoint.tensors()) EXPECT_FALSE(isExpertWeight(t)) << t.info->name;
}

// gpt-oss stacks every expert in one tensor: each cell is its expert's slice, and selects the stacked tensor.
TEST(ExpertOverviewLayoutTest, GptOssCellsAreSlicesOfTheStackedTensors) {
    const io::Checkpoint checkpoint = open(kGptOss);
    const int layers = configInt(kGptOss, "num_hidden_layers");
    const int experts = configInt(kGptOss, "num_local_experts");
    const std::vector<ExpertLinear> linears = expertLinears(checkpoint);
    ASSERT_EQ(linearNames(linears), (std::vector<std::string>{"mlp.experts:gate_up_proj", "mlp.experts:down_proj"}));
    for (const ExpertLinear& linear : linears) {
        const ExpertLayout layout = expertLayout(checkpoint, linear);
        ASSERT_EQ(layout.layers.size(), static_cast<std::size_t>(layers));
        ASSERT_EQ(layout.experts, experts);
        ASSERT_EQ(layout.cells.size(), static_cast<std::size_t>(layers * experts));
        for (const ExpertCell& cell : layout.cells) {
            EXPECT_EQ(cell.source, ExpertSource::StackedSlice);
            EXPECT_EQ(cell.tensor, layerName(cell.layer, "mlp.experts." + linear.linear));
        }
        const analysis::LayerOverview overview = computeExpertOverview(checkpoint, layout);
        ASSERT_EQ(overview.modules.size(), static_cast<std::size_t>(experts));
        for (int l = 0; l < layers; ++l)
            for (int e = 0; e < experts; ++e) {
                const std::string tensor = layerName(l, "mlp.experts." + linear.linear);
                const analysis::WeightStats* cell =
                    overview.cell(static_cast<std::size_t>(l), static_cast<std::size_t>(e));
                expectStats(cell, stackedSlice(checkpoint, tensor, e), tensor + "[" + std::to_string(e) + "]");
                if (cell) {
                    EXPECT_EQ(cell->tensor, tensor);
                }
            }
    }
    // The biases beside them are not weights; the module log's per-expert names find the stacked tensor.
    EXPECT_FALSE(isExpertWeight(*checkpoint.find("model.layers.0.mlp.experts.gate_up_proj_bias")));
    EXPECT_EQ(expertWeightTensor(checkpoint, 2, "mlp.experts.3.gate_up_proj"),
              layerName(2, "mlp.experts.gate_up_proj"));
    EXPECT_EQ(expertWeightTensor(checkpoint, 0, "mlp.experts.1.down_proj"), layerName(0, "mlp.experts.down_proj"));
    EXPECT_EQ(expertWeightTensor(checkpoint, 0, "mlp.experts." + std::to_string(experts) + ".down_proj"), std::nullopt);
}

TEST(ExpertOverviewLayoutTest, Qwen3MoeStatisticsAreEachExpertsOwn) {
    const io::Checkpoint checkpoint = open(kQwen3Moe);
    const ExpertLayout layout = expertLayout(checkpoint, {"mlp.experts", "down_proj"});
    const analysis::LayerOverview overview = computeExpertOverview(checkpoint, layout);
    for (std::size_t r = 0; r < overview.layers.size(); ++r)
        for (std::size_t e = 0; e < overview.modules.size(); ++e) {
            const std::string tensor =
                layerName(overview.layers[r], "mlp.experts." + std::to_string(e) + ".down_proj.weight");
            expectStats(overview.cell(r, e), checkpoint.tensor(tensor).toF32(), tensor);
        }
}

// gpt-oss as OpenAI ships it: the experts in MXFP4 blocks, each cell the decoded expert; the tensor a
// click selects is the blocks.
TEST(ExpertOverviewLayoutTest, GptOssMxfp4ExpertsAreDecodedOneByOne) {
    QTemporaryDir tmp;
    const auto report = pipeline::exportGptOssMxfp4(
        {kGptOss.toStdString(), (tmp.path() + QStringLiteral("/mxfp4")).toStdString()}, {}, {});
    const io::Checkpoint mxfp4 = io::Checkpoint::open(report.written);
    const io::Checkpoint bf16 = open(kGptOss);
    ASSERT_EQ(linearNames(expertLinears(mxfp4)),
              (std::vector<std::string>{"mlp.experts:gate_up_proj", "mlp.experts:down_proj"}));
    const ExpertLayout layout = expertLayout(mxfp4, {"mlp.experts", "down_proj"});
    const int experts = configInt(kGptOss, "num_local_experts");
    ASSERT_EQ(layout.experts, experts);
    ASSERT_EQ(layout.cells.size(), static_cast<std::size_t>(configInt(kGptOss, "num_hidden_layers") * experts));
    const analysis::LayerOverview overview = computeExpertOverview(mxfp4, layout);
    const formats::LinearReader reader(mxfp4);
    for (const ExpertCell& cell : layout.cells) {
        const std::string stacked = layerName(cell.layer, "mlp.experts.down_proj");
        EXPECT_EQ(cell.source, ExpertSource::StackedMxfp4);
        EXPECT_EQ(cell.tensor, stacked + "_blocks");
        const MatrixF decoded = reader.decodeF32(stacked, cell.expert);
        const std::vector<float> values(decoded.data(), decoded.data() + decoded.size());
        const analysis::WeightStats* stats =
            overview.cell(static_cast<std::size_t>(cell.layer), static_cast<std::size_t>(cell.expert));
        expectStats(stats, values, cell.tensor + "[" + std::to_string(cell.expert) + "]");
        // MXFP4 keeps the expert's spread (4 bits, a shared exponent per 32): near the BF16 expert's σ.
        const double bf16Sigma = bruteMoments(stackedSlice(bf16, stacked, cell.expert)).stddev;
        if (stats) {
            EXPECT_NEAR(stats->stddev, bf16Sigma, 0.15 * bf16Sigma) << cell.tensor;
        }
    }
}

class ExpertOverviewPageTest : public QtAppTest {
protected:
    bool waitForIdle() {
        return waitUntil([this] { return !window.isBusy(); });
    }

    MainWindow window{MainWindow::Settings::Ignore};
};

TEST_F(ExpertOverviewPageTest, Qwen3MoeOffersTheDenseLinearsAndEachExpertLinear) {
    window.show();
    ASSERT_TRUE(window.openPath(kQwen3Moe));
    ASSERT_TRUE(window.showPage(QStringLiteral("overview")));
    ASSERT_TRUE(waitForIdle());
    OverviewPage& page = *window.overviewPage();
    EXPECT_EQ(page.moduleViews(),
              (QStringList{QStringLiteral("dense linears"), QStringLiteral("experts: gate_proj"),
                           QStringLiteral("experts: up_proj"), QStringLiteral("experts: down_proj")}));
    // The dense view: attention and the router, no expert.
    ASSERT_TRUE(page.overview().has_value());
    EXPECT_EQ(page.overview()->modules, (std::vector<std::string>{"self_attn.q_proj", "self_attn.k_proj",
                                                                  "self_attn.v_proj", "self_attn.o_proj", "mlp.gate"}));

    ASSERT_TRUE(page.setModuleView(QStringLiteral("experts: down_proj")));
    ASSERT_TRUE(waitForIdle());
    ASSERT_TRUE(page.overview().has_value());
    const int experts = configInt(kQwen3Moe, "num_experts");
    EXPECT_EQ(page.overview()->modules.size(), static_cast<std::size_t>(experts));
    EXPECT_EQ(page.overview()->layers.size(), static_cast<std::size_t>(configInt(kQwen3Moe, "num_hidden_layers")));
    clickPlot(*page.plot(), 2.0, 1.0);  // expert 2 of layer 1
    EXPECT_EQ(window.currentTensor(), "model.layers.1.mlp.experts.2.down_proj.weight");
    page.activateCell(0, static_cast<std::size_t>(experts - 1));
    EXPECT_EQ(window.currentTensor(),
              QString::fromStdString(layerName(0, "mlp.experts." + std::to_string(experts - 1) + ".down_proj.weight")));
    EXPECT_FALSE(page.setModuleView(QStringLiteral("experts: gate_up_proj")));

    // Back to the dense view: computed once, shown again at once.
    ASSERT_TRUE(page.setModuleView(QStringLiteral("dense linears")));
    EXPECT_FALSE(page.isBusy());
    ASSERT_TRUE(page.overview().has_value());
    EXPECT_EQ(page.overview()->modules.size(), 5u);
}

// The router's column says "router": its module's own name, "gate", reads as gate_proj.
TEST_F(ExpertOverviewPageTest, TheRoutersColumnIsLabelledRouter) {
    window.show();
    ASSERT_TRUE(window.openPath(kQwen3Moe));
    ASSERT_TRUE(window.showPage(QStringLiteral("overview")));
    ASSERT_TRUE(waitForIdle());
    OverviewPage& page = *window.overviewPage();
    ASSERT_TRUE(page.overview().has_value());
    const auto& modules = page.overview()->modules;
    const auto router = std::find(modules.begin(), modules.end(), "mlp.gate");
    ASSERT_NE(router, modules.end());
    const auto ticker = page.plot()->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
    ASSERT_TRUE(ticker);
    const QMap<double, QString> labels = ticker->ticks();
    EXPECT_EQ(labels.value(static_cast<double>(router - modules.begin())), QStringLiteral("router"));
    EXPECT_FALSE(labels.values().contains(QStringLiteral("gate")));
    EXPECT_TRUE(labels.values().contains(QStringLiteral("q_proj")));
}

TEST_F(ExpertOverviewPageTest, ADenseCheckpointShowsItsModulesAsBefore) {
    window.show();
    ASSERT_TRUE(window.openPath(kQwen3Moe));
    ASSERT_TRUE(window.openPath(kStories));  // after a MoE checkpoint: its experts' entries are gone
    ASSERT_TRUE(window.showPage(QStringLiteral("overview")));
    ASSERT_TRUE(waitForIdle());
    OverviewPage& page = *window.overviewPage();
    EXPECT_EQ(page.moduleViews(), QStringList{QStringLiteral("dense linears")});
    ASSERT_TRUE(page.overview().has_value());
    EXPECT_EQ(page.overview()->modules.size(), 7u);
}

TEST_F(ExpertOverviewPageTest, AGptOssCellSelectsTheStackedTensor) {
    window.show();
    ASSERT_TRUE(window.openPath(kGptOss));
    OverviewPage& page = *window.overviewPage();
    ASSERT_TRUE(page.setModuleView(QStringLiteral("experts: gate_up_proj")));
    ASSERT_TRUE(window.showPage(QStringLiteral("overview")));
    ASSERT_TRUE(waitForIdle());
    ASSERT_TRUE(page.overview().has_value());
    EXPECT_EQ(page.overview()->modules.size(), static_cast<std::size_t>(configInt(kGptOss, "num_local_experts")));
    clickPlot(*page.plot(), 3.0, 2.0);
    EXPECT_EQ(window.currentTensor(), "model.layers.2.mlp.experts.gate_up_proj");
}

// The Results' tokens-per-expert heat map after a real job on gpt-oss: the log names expert 3's linear
// "mlp.experts.3.gate_up_proj", which has no tensor of its own; a click selects the stacked one.
TEST_F(ExpertOverviewPageTest, AGptOssTokensPerExpertClickSelectsTheStackedTensor) {
    window.show();
    ASSERT_TRUE(window.openPath(kGptOss));
    QuantizePanel& panel = *window.quantizePanel();
    ASSERT_TRUE(panel.refusal().isEmpty()) << panel.refusal().toStdString();
    ASSERT_TRUE(panel.selectMethods({"gptq4"}));
    panel.setSampling(4, 32, 2);
    window.resultsPage()->preferExpertTokens(true);
    QString failure;
    QObject::connect(window.quantizeJob(), &QuantizeJob::failed, [&](const QString& m) { failure = m; });
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitUntil([&] { return !window.quantizeJob()->isRunning(); }, 120000));
    ASSERT_TRUE(failure.isEmpty()) << failure.toStdString();
    ASSERT_TRUE(window.resultsPage()->expertTokensInFront());
    ExpertHeatMap& map = *window.resultsPage()->expertHeatMap();
    const ExpertTokens* cell = map.grid().cell(1, 3);
    ASSERT_NE(cell, nullptr);
    EXPECT_EQ(cell->module, "mlp.experts.3.gate_up_proj");
    QCoreApplication::processEvents();  // laid out: the click's pixels are the cell's
    clickPlot(map, 3.0, 1.0);
    EXPECT_EQ(window.currentTensor(), "model.layers.1.mlp.experts.gate_up_proj");
}

}  // namespace
}  // namespace qs::gui::test
