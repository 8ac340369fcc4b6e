// The damage each MoE expert took, in the Results page's "Error per expert" tab: the grid is the mean
// of an expert's linears' output errors as the module log has them (module log rows written here, with
// a linear without calibration left out), and on a real job on the tiny Qwen3-MoE the map shows exactly
// what the log says for the method chosen, per expert of every layer; a click selects the expert.
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "experts/expert_error_grid.h"
#include "jobs/quantize_job.h"
#include "pages/results_page.h"
#include "panels/quantize_panel.h"
#include "plots/expert_error_map.h"
#include "qt_test_support.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

const QString kQwen3Moe = QStringLiteral(QS_TEST_DATA_DIR "/moe/qwen3-moe-tiny");

pipeline::ModuleLog row(int layer, const std::string& module, double outputError) {
    pipeline::ModuleLog r;
    r.method = "gptq4";
    r.layer = layer;
    r.module = module;
    r.outputError = outputError;
    r.routedTokens = module.starts_with("mlp.experts.") ? 10 : -1;
    return r;
}

TEST(ExpertErrorGridTest, TheMeanOfAnExpertsLinearsTheirMaximumAndItsFirstLinear) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<pipeline::ModuleLog> rows = {
        row(0, "self_attn.q_proj", 0.5),  // not an expert
        row(1, "mlp.experts.0.down_proj", 0.04), row(1, "mlp.experts.0.gate_proj", 0.01),
        row(1, "mlp.experts.0.up_proj", 0.01),   row(1, "mlp.experts.2.up_proj", 0.2),
        row(1, "mlp.experts.2.gate_proj", nan),  // no output error: left out of the mean
    };
    const ExpertErrorGrid grid = ExpertErrorGrid::fromModuleLogs(rows);
    ASSERT_EQ(grid.layers(), 2);
    ASSERT_EQ(grid.experts(), 3);
    const ExpertError* e0 = grid.cell(1, 0);
    ASSERT_NE(e0, nullptr);
    EXPECT_DOUBLE_EQ(e0->meanError, 0.02);
    EXPECT_DOUBLE_EQ(e0->maxError, 0.04);
    EXPECT_EQ(e0->linears, 3);
    EXPECT_EQ(e0->module, "mlp.experts.0.gate_proj");  // gate before up before down, whatever the log's order
    const ExpertError* e2 = grid.cell(1, 2);
    ASSERT_NE(e2, nullptr);
    EXPECT_DOUBLE_EQ(e2->meanError, 0.2);
    EXPECT_EQ(e2->linears, 1);
    EXPECT_EQ(grid.cell(1, 1), nullptr);  // no row for that expert
    EXPECT_EQ(grid.cell(0, 0), nullptr);  // a dense layer
    EXPECT_DOUBLE_EQ(grid.minError(), 0.02);
    EXPECT_DOUBLE_EQ(grid.maxError(), 0.2);
    EXPECT_TRUE(ExpertErrorGrid::fromModuleLogs({row(0, "self_attn.q_proj", 0.5)}).empty());
}

class MoeErrorJobTest : public QtAppTest {};

TEST_F(MoeErrorJobTest, TheMapShowsEachExpertsLoggedErrorForTheMethodChosen) {
    MainWindow window{MainWindow::Settings::Ignore};
    window.show();
    ASSERT_TRUE(window.openPath(kQwen3Moe));
    QuantizePanel& panel = *window.quantizePanel();
    ASSERT_TRUE(panel.selectMethods({"rtn4", "gptq4"}));
    panel.setSampling(4, 32, 2);
    QString failure;
    QObject::connect(window.quantizeJob(), &QuantizeJob::failed, [&](const QString& m) { failure = m; });
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitUntil([&] { return !window.quantizeJob()->isRunning(); }, 120000));
    ASSERT_TRUE(failure.isEmpty()) << failure.toStdString();

    ResultsPage& page = *window.resultsPage();
    ASSERT_TRUE(page.showsExpertErrors());
    const pipeline::JobResult& result = *page.result();
    ASSERT_EQ(page.expertErrorMethods().size(), 2);
    for (const pipeline::MethodResult& method : result.methods) {
        ASSERT_TRUE(page.chooseExpertErrorMethod(QString::fromStdString(method.label())));
        // (layer, expert) → the mean of its linears' logged output errors, from the log's rows
        std::map<std::pair<int, int>, std::pair<double, int>> logged;
        for (const pipeline::ModuleLog& r : method.modules) {
            if (!r.module.starts_with("mlp.experts.")) continue;
            const int expert = std::stoi(r.module.substr(std::string("mlp.experts.").size()));
            auto& [sum, count] = logged[{r.layer, expert}];
            sum += r.outputError;
            ++count;
        }
        ASSERT_FALSE(logged.empty());
        const ExpertErrorMap& map = *page.expertErrorMap();
        for (const auto& [where, sum] : logged)
            EXPECT_DOUBLE_EQ(map.cellValue(where.first, where.second), sum.first / sum.second)
                << method.label() << " " << where.first << "," << where.second;
    }
    // The two methods damage the experts differently: the map follows the choice.
    ASSERT_TRUE(page.chooseExpertErrorMethod(QString::fromStdString(result.methods[0].label())));
    const double rtn = page.expertErrorMap()->cellValue(0, 0);
    ASSERT_TRUE(page.chooseExpertErrorMethod(QString::fromStdString(result.methods[1].label())));
    EXPECT_NE(page.expertErrorMap()->cellValue(0, 0), rtn);
    // A click on layer 1's expert 2 selects its first linear.
    emit page.expertErrorMap()->clicked(2.0, 1.0);
    EXPECT_TRUE(window.currentTensor().startsWith(QStringLiteral("model.layers.1.mlp.experts.2.gate_proj")))
        << window.currentTensor().toStdString();
}

}  // namespace
}  // namespace qs::gui::test
