// The tokens each MoE expert saw, in the window: expert names, the layer × expert heat map and the
// module log's "tokens routed" column on module log rows written here (one starved expert), and a real
// job on the tiny Qwen3-MoE whose logged counts the heat map must show unchanged.
#include <algorithm>
#include <map>
#include <string>

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

#include "experts/expert_path.h"
#include "experts/expert_token_grid.h"
#include "jobs/quantize_job.h"
#include "models/module_log_model.h"
#include "pages/results_page.h"
#include "panels/quantize_panel.h"
#include "plots/expert_heat_map.h"
#include "qt_test_support.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

const QString kQwen3Moe = QStringLiteral(QS_TEST_DATA_DIR "/moe/qwen3-moe-tiny");

QJsonObject configOf(const QString& folder) {
    QFile file(folder + QStringLiteral("/config.json"));
    EXPECT_TRUE(file.open(QIODevice::ReadOnly)) << folder.toStdString();
    return QJsonDocument::fromJson(file.readAll()).object();
}

TEST(ExpertPathTest, NamesTheExpertOfEveryLayoutAndNothingElse) {
    const auto qwen = parseExpertPath("mlp.experts.17.down_proj");
    ASSERT_TRUE(qwen);
    EXPECT_EQ(qwen->container, "mlp.experts");
    EXPECT_EQ(qwen->expert, 17);
    EXPECT_EQ(qwen->rest, "down_proj");
    const auto mixtral = parseExpertPath("block_sparse_moe.experts.3.w1");
    ASSERT_TRUE(mixtral);
    EXPECT_EQ(mixtral->container, "block_sparse_moe.experts");
    EXPECT_EQ(mixtral->expert, 3);
    EXPECT_EQ(mixtral->rest, "w1");
    const auto stacked = parseExpertPath("mlp.experts");
    ASSERT_TRUE(stacked);
    EXPECT_EQ(stacked->expert, -1);
    EXPECT_EQ(stacked->rest, "");
    const auto stackedBias = parseExpertPath("mlp.experts.gate_up_proj");
    ASSERT_TRUE(stackedBias);
    EXPECT_EQ(stackedBias->expert, -1);
    EXPECT_EQ(stackedBias->rest, "gate_up_proj");
    for (const char* notAnExpert :
         {"mlp.gate", "mlp.router", "mlp.shared_expert.up_proj", "mlp.shared_experts.down_proj",
          "mlp.shared_expert_gate", "self_attn.q_proj", "mlp.num_experts", ""})
        EXPECT_FALSE(parseExpertPath(notAnExpert)) << notAnExpert;
    EXPECT_EQ(parseExpertPath("mlp.experts.-1.w1")->expert, -1);  // not an index: a name
}

// Module log rows as a job writes them: attention rows (no routing), then each expert's gate, up and
// down with the same routed count; layer 1's expert 2 saw 5 tokens for 32 inputs: starved.
std::vector<pipeline::ModuleLog> syntheticLog(const std::string& method) {
    std::vector<pipeline::ModuleLog> rows;
    for (int layer = 0; layer < 2; ++layer) {
        pipeline::ModuleLog attention;
        attention.method = method;
        attention.layer = layer;
        attention.module = "self_attn.q_proj";
        attention.inFeatures = 32;
        attention.samples = 200;
        rows.push_back(attention);
        for (int e = 0; e < 4; ++e)
            for (const char* linear : {"gate_proj", "up_proj", "down_proj"}) {
                pipeline::ModuleLog row;
                row.method = method;
                row.layer = layer;
                row.module = "mlp.experts." + std::to_string(e) + "." + linear;
                row.inFeatures = std::string(linear) == "down_proj" ? 16 : 32;
                row.routedTokens = layer == 1 && e == 2 ? 5 : 40 + 10 * layer + e;
                row.samples = row.routedTokens;  // routed-only calibration
                rows.push_back(row);
            }
    }
    return rows;
}

TEST(ExpertTokenGridTest, OneValuePerExpertNotTheSumOfItsLinears) {
    const ExpertTokenGrid grid = ExpertTokenGrid::fromModuleLogs(syntheticLog("gptq4"));
    ASSERT_EQ(grid.layers(), 2);
    ASSERT_EQ(grid.experts(), 4);
    for (int layer = 0; layer < 2; ++layer)
        for (int e = 0; e < 4; ++e) {
            const ExpertTokens* cell = grid.cell(layer, e);
            ASSERT_NE(cell, nullptr);
            const bool starved = layer == 1 && e == 2;
            EXPECT_EQ(cell->routedTokens, starved ? 5 : 40 + 10 * layer + e) << layer << "," << e;
            EXPECT_EQ(cell->starved, starved) << layer << "," << e;
            EXPECT_EQ(cell->module, "mlp.experts." + std::to_string(e) + ".gate_proj");
        }
    EXPECT_EQ(grid.cell(1, 2)->samples, 5);
    EXPECT_EQ(grid.cell(1, 2)->inFeatures, 32);
    EXPECT_EQ(grid.starvedCount(), 1);
    EXPECT_EQ(grid.minTokens(), 5);
    EXPECT_EQ(grid.maxTokens(), 53);
    EXPECT_EQ(grid.cell(2, 0), nullptr);
    EXPECT_EQ(grid.cell(0, 4), nullptr);
    // A dense log has no experts.
    std::vector<pipeline::ModuleLog> dense = syntheticLog("rtn4");
    std::erase_if(dense, [](const pipeline::ModuleLog& r) { return r.routedTokens >= 0; });
    EXPECT_TRUE(ExpertTokenGrid::fromModuleLogs(dense).empty());
}

// gpt-oss's log has an expert's down_proj before its gate_up_proj: a click still selects gate_up_proj.
TEST(ExpertTokenGridTest, AClickSelectsTheExpertsFirstLinearInBlockOrder) {
    std::vector<pipeline::ModuleLog> rows;
    for (const char* linear : {"down_proj", "gate_up_proj"}) {
        pipeline::ModuleLog row;
        row.layer = 0;
        row.module = std::string("mlp.experts.1.") + linear;
        row.routedTokens = 12;
        rows.push_back(row);
    }
    EXPECT_EQ(ExpertTokenGrid::fromModuleLogs(rows).cell(0, 1)->module, "mlp.experts.1.gate_up_proj");
    std::reverse(rows.begin(), rows.end());
    EXPECT_EQ(ExpertTokenGrid::fromModuleLogs(rows).cell(0, 1)->module, "mlp.experts.1.gate_up_proj");
}

// A dense layer (Qwen3-MoE's mlp_only_layers) among MoE layers stays an empty row.
TEST(ExpertTokenGridTest, ADenseLayerBetweenMoeLayersIsAnEmptyRow) {
    std::vector<pipeline::ModuleLog> rows = syntheticLog("gptq4");
    for (auto& r : rows) r.layer = r.layer == 1 ? 2 : r.layer;
    const ExpertTokenGrid grid = ExpertTokenGrid::fromModuleLogs(rows);
    EXPECT_EQ(grid.layers(), 3);
    for (int e = 0; e < 4; ++e) EXPECT_EQ(grid.cell(1, e), nullptr);
    EXPECT_EQ(grid.cell(2, 2)->routedTokens, 5);
}

class ExpertHeatMapTest : public QtAppTest {};

TEST_F(ExpertHeatMapTest, DrawsEveryCellAndOutlinesTheStarvedExpert) {
    auto result = std::make_shared<pipeline::JobResult>();
    for (const char* method : {"rtn4", "gptq4"}) {
        pipeline::MethodResult m;
        m.modules = syntheticLog(method);
        result->methods.push_back(std::move(m));
    }
    ExpertHeatMap map;
    map.resize(600, 400);
    map.setResult(result);
    ASSERT_TRUE(map.hasData());
    for (int layer = 0; layer < 2; ++layer)
        for (int e = 0; e < 4; ++e)
            EXPECT_EQ(map.cellValue(layer, e), layer == 1 && e == 2 ? 5.0 : 40.0 + 10 * layer + e) << layer << "," << e;
    EXPECT_EQ(map.starvedMarks(), 1);
    const QString tip = map.toolTipAt(2.0, 1.0);
    EXPECT_TRUE(tip.contains(QStringLiteral("layer 1 · expert 2"))) << tip.toStdString();
    EXPECT_TRUE(tip.contains(QStringLiteral("5 token(s) routed"))) << tip.toStdString();
    EXPECT_TRUE(tip.contains(QStringLiteral("starved"))) << tip.toStdString();
    const QString healthy = map.toolTipAt(3.2, 0.1);
    EXPECT_TRUE(healthy.contains(QStringLiteral("layer 0 · expert 3"))) << healthy.toStdString();
    EXPECT_TRUE(healthy.contains(QStringLiteral("43 token(s)"))) << healthy.toStdString();
    EXPECT_FALSE(healthy.contains(QStringLiteral("starved")));
    EXPECT_TRUE(map.toolTipAt(4.6, 0.0).isEmpty());  // right of the last expert

    // A result without experts clears the map and its marks.
    map.setResult(std::make_shared<pipeline::JobResult>());
    EXPECT_FALSE(map.hasData());
    EXPECT_EQ(map.starvedMarks(), 0);
}

TEST_F(ExpertHeatMapTest, TheResultsPageHasATokensPerExpertTabOnlyForExperts) {
    ResultsPage page;
    auto moe = std::make_shared<pipeline::JobResult>();
    pipeline::MethodResult m;
    m.modules = syntheticLog("gptq4");
    moe->methods.push_back(m);
    page.setResult(moe);
    EXPECT_TRUE(page.showsExpertTokens());
    EXPECT_FALSE(page.expertTokensInFront());  // Methods stays in front unless asked
    EXPECT_EQ(page.expertHeatMap()->starvedMarks(), 1);
    auto dense = std::make_shared<pipeline::JobResult>();
    std::erase_if(m.modules, [](const pipeline::ModuleLog& r) { return r.routedTokens >= 0; });
    dense->methods.push_back(m);
    page.setResult(dense);
    EXPECT_FALSE(page.showsExpertTokens());
    page.preferExpertTokens(true);
    page.setResult(moe);
    EXPECT_TRUE(page.expertTokensInFront());
}

TEST_F(ExpertHeatMapTest, TheModuleLogSaysTokensRoutedAndMarksStarvedRows) {
    ModuleLogModel log;
    ModelChecker checker(&log);
    for (const auto& row : syntheticLog("gptq4")) log.append(row);
    EXPECT_EQ(log.headerData(ModuleLogModel::RoutedColumn, Qt::Horizontal).toString(), QStringLiteral("tokens routed"));
    const auto cell = [&](int row, int role = Qt::DisplayRole) {
        return log.index(row, ModuleLogModel::RoutedColumn).data(role);
    };
    int starvedRows = 0;
    for (int r = 0; r < log.rowCount(); ++r) {
        const pipeline::ModuleLog& row = log.rows()[static_cast<std::size_t>(r)];
        const QString text = cell(r).toString();
        if (row.routedTokens < 0) {
            EXPECT_TRUE(text.isEmpty()) << row.module;
        } else if (row.layer == 1 && row.module.starts_with("mlp.experts.2.")) {
            EXPECT_EQ(text, QStringLiteral("5 (starved)"));
            for (int c = 0; c < ModuleLogModel::ColumnCount; ++c)
                EXPECT_TRUE(log.index(r, c).data(Qt::BackgroundRole).isValid()) << row.module << " column " << c;
            EXPECT_TRUE(log.index(r, ModuleLogModel::ModuleColumn)
                            .data(Qt::ToolTipRole)
                            .toString()
                            .contains(QStringLiteral("5 tokens for %1 inputs").arg(row.inFeatures)));
            ++starvedRows;
            continue;
        } else {
            EXPECT_EQ(text, QString::number(row.routedTokens)) << row.module;
        }
        EXPECT_FALSE(log.index(r, ModuleLogModel::ModuleColumn).data(Qt::BackgroundRole).isValid()) << row.module;
    }
    EXPECT_EQ(starvedRows, 3);  // gate and up (32 inputs) and down (16): 5 tokens starve all three
}

// A real job on the tiny Qwen3-MoE: the log shows each expert's routed tokens, and the heat map shows
// exactly what the log says (the largest over an expert's linears), for every expert of every layer.
class MoeJobTest : public QtAppTest {};

TEST_F(MoeJobTest, TheHeatMapShowsTheRoutedTokensTheJobLogged) {
    MainWindow window{MainWindow::Settings::Ignore};
    window.show();
    ASSERT_TRUE(window.openPath(kQwen3Moe));
    QuantizePanel& panel = *window.quantizePanel();
    EXPECT_TRUE(panel.refusal().isEmpty()) << panel.refusal().toStdString();
    ASSERT_TRUE(panel.selectMethods({"gptq4"}));
    panel.setSampling(4, 32, 2);
    QString failure;
    QObject::connect(window.quantizeJob(), &QuantizeJob::failed, [&](const QString& m) { failure = m; });
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitUntil([&] { return !window.quantizeJob()->isRunning(); }, 120000));
    ASSERT_TRUE(failure.isEmpty()) << failure.toStdString();

    std::map<std::pair<int, int>, std::int64_t> logged;  // (layer, expert) → routed tokens, from the log's text
    const ModuleLogModel& log = *window.moduleLog();
    for (int r = 0; r < log.rowCount(); ++r) {
        const QString module = log.index(r, ModuleLogModel::ModuleColumn).data().toString();
        const QString routed = log.index(r, ModuleLogModel::RoutedColumn).data().toString();
        const auto match = QRegularExpression(QStringLiteral(R"(^mlp\.experts\.(\d+)\.)")).match(module);
        EXPECT_EQ(match.hasMatch(), !routed.isEmpty()) << module.toStdString();
        if (!match.hasMatch()) continue;
        const int layer = log.index(r, ModuleLogModel::LayerColumn).data().toInt();
        auto& tokens = logged[{layer, match.captured(1).toInt()}];
        tokens = std::max<std::int64_t>(tokens, routed.section(QLatin1Char(' '), 0, 0).toLongLong());
    }
    const QJsonObject config = configOf(kQwen3Moe);
    const int layers = config.value(QStringLiteral("num_hidden_layers")).toInt();
    const int experts = config.value(QStringLiteral("num_experts")).toInt();
    ASSERT_EQ(logged.size(), static_cast<std::size_t>(layers * experts));
    const ResultsPage& page = *window.resultsPage();
    ASSERT_TRUE(page.showsExpertTokens());
    const ExpertHeatMap& map = *page.expertHeatMap();
    ASSERT_EQ(map.grid().layers(), layers);
    ASSERT_EQ(map.grid().experts(), experts);
    std::int64_t routedPerLayer = 0;
    for (const auto& [where, tokens] : logged) {
        EXPECT_EQ(map.cellValue(where.first, where.second), static_cast<double>(tokens))
            << where.first << "," << where.second;
        if (where.first == 0) routedPerLayer += tokens;
    }
    // The router picks num_experts_per_tok experts for every calibration token.
    const auto calibrationTokens = static_cast<std::int64_t>(page.result()->calibrationTokens);
    EXPECT_EQ(routedPerLayer, calibrationTokens * config.value(QStringLiteral("num_experts_per_tok")).toInt());
}

}  // namespace
}  // namespace qs::gui::test
