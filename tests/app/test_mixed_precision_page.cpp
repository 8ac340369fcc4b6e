// The Mixed precision tab: the budget slider puts the allocator's answer for that budget on the heat
// map, within 100 ms a step on a 32-layer frontier; the event loop keeps turning (the 50 ms stall
// test) while a measurement pass runs; a quantized allocation lands on the plot beside its
// prediction, in Results and in Export, which writes it as the CLI's quantize --target-bpw does;
// the rules table refuses what the CLI refuses, in one line.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QSlider>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include "qs/formats/linear_encoder.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/mixed_methods.h"
#include "qs/pipeline/mixed_precision_allocation.h"
#include "qs/pipeline/mixed_precision_report.h"

#include "export_support.h"
#include "models/results_table_model.h"
#include "pages/mixed_precision_page.h"
#include "pages/results_page.h"
#include "panels/export_panel.h"
#include "plots/kl_per_layer_plot.h"
#include "plots/mixed_allocation_map.h"
#include "plots/plot_view.h"
#include "qt_test_support.h"
#include "sensitivity_tables.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

class MixedPageTest : public QtAppTest {};

std::shared_ptr<const io::Checkpoint> demo() {
    return std::make_shared<const io::Checkpoint>(io::Checkpoint::open(kDemo.toStdString()));
}

TEST_F(MixedPageTest, TheSliderPutsTheAllocatorsAnswerOnTheHeatMapWithin100Ms) {
    MixedPrecisionPage page;
    page.resize(1366, 720);
    page.show();
    const pipeline::SensitivityTable table = deepTable(32);
    page.setTable(table);
    // The allocator's answers, from a planner of this test's own over the same table.
    const pipeline::MixedPrecisionPlanner reference(table, {}, {"rtn3", "rtn4", "rtn8"});
    const auto frontier = reference.frontier(48);
    ASSERT_EQ(page.frontier().size(), frontier.size());
    ASSERT_GE(frontier.size(), 30u);
    ASSERT_EQ(page.budgetSlider()->maximum(), int(frontier.size()) - 1);
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&page));
    qint64 slowest = 0;
    for (int i = 0; i < int(frontier.size()); ++i) {
        const int step = (i * 7) % int(frontier.size());  // jumps back and forth, as a drag does
        QElapsedTimer clock;
        clock.start();
        page.budgetSlider()->setValue(step);
        page.allocationMap()->repaint();
        QCoreApplication::processEvents();  // the plot's queued replot
        slowest = std::max(slowest, clock.elapsed());
        const pipeline::MixedMethods expected = reference.methods(frontier[std::size_t(step)], "reference");
        ASSERT_EQ(page.allocationMap()->layerCount(), 32);
        for (int l = 0; l < 32; ++l)
            for (auto module : model::LayerWeights::kLinearModules)
                ASSERT_EQ(page.allocationMap()->methodAt(l, module).toStdString(), expected.methodOf(l, module)->name)
                    << "budget step " << step << ", layer " << l << " " << module;
        EXPECT_NEAR(page.currentAllocation()->bitsPerWeight, frontier[std::size_t(step)].bitsPerWeight, 1e-12);
    }
    RecordProperty("slowest_slider_step_ms", int(slowest));
    EXPECT_LT(slowest, 100);
    EXPECT_EQ(page.allocationMap()->legend(), QStringList({"rtn3", "rtn4", "rtn8"}));
}

TEST_F(MixedPageTest, AMeasurementRunsOnTheWorkerAndAQuantizedAllocationLandsOnThePlot) {
    MixedPrecisionPage page;
    page.resize(1366, 720);
    page.show();
    page.setCheckpoint(demo());
    page.setCandidates(QStringLiteral("rtn4,rtn8"));
    page.setSensitivity(pipeline::Sensitivity::GroupKl);
    page.setSampling(4, 64, 4);
    bool finished = false, measured = false;
    QObject::connect(&page, &MixedPrecisionPage::measurementFinished, [&] { finished = true; });
    QObject::connect(&page, &MixedPrecisionPage::allocationMeasured, [&] { measured = true; });
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&page));  // the first paint is the window's own work
    StallMeter meter;
    ASSERT_TRUE(page.measure());
    EXPECT_TRUE(page.isBusy());
    ASSERT_TRUE(waitUntil([&] { return finished; }, 120000)) << page.status().toStdString();
    meter.stop();
    EXPECT_LT(meter.longestGapMs(), 50);
    RecordProperty("longest_gap_ms", int(meter.longestGapMs()));
    ASSERT_NE(page.planner(), nullptr);
    const pipeline::SensitivityTable& t = page.planner()->table();
    ASSERT_EQ(t.candidates.size(), 2u);
    EXPECT_EQ(page.plot()->graph(1)->dataCount(), 2);  // the uniform methods' measured points
    ASSERT_GE(page.frontier().size(), 3u);
    EXPECT_EQ(page.plot()->graph(0)->dataCount(), int(page.frontier().size()));

    // A point inside the frontier: some groups at rtn8, the rest at rtn4.
    page.budgetSlider()->setValue(int(page.frontier().size()) / 2);
    const pipeline::MixedAllocation chosen = *page.currentAllocation();
    ASSERT_TRUE(page.quantizeAllocation());
    ASSERT_TRUE(waitUntil([&] { return measured; }, 120000)) << page.status().toStdString();
    ASSERT_EQ(page.measuredPoints().size(), 1u);
    const auto& point = page.measuredPoints().front();
    EXPECT_NEAR(point.bitsPerWeight, chosen.bitsPerWeight, 1e-9);  // the bits the table predicted are those stored
    EXPECT_EQ(point.predictedKl, chosen.predictedKl);
    EXPECT_LT(point.measuredKl, t.uniformKl[0]);
    EXPECT_GT(point.measuredKl, t.uniformKl[1]);
    EXPECT_EQ(page.plot()->graph(2)->dataCount(), 1);
}

// Every tensor and the quantization config of two exports, compared: "" when identical, else the first difference.
std::string firstDifference(const QString& a, const QString& b) {
    const io::Checkpoint x = io::Checkpoint::open(a.toStdString()), y = io::Checkpoint::open(b.toStdString());
    if (x.quantizationConfig() != y.quantizationConfig())
        return "quantization_config: " + x.quantizationConfig().dump() + " against " + y.quantizationConfig().dump();
    if (x.tensors().size() != y.tensors().size())
        return std::to_string(x.tensors().size()) + " tensors against " + std::to_string(y.tensors().size());
    for (std::size_t i = 0; i < x.tensors().size(); ++i) {
        const auto& tx = x.tensors()[i];
        const auto& ty = y.tensors()[i];
        if (tx.info->name != ty.info->name) return tx.info->name + " against " + ty.info->name;
        const auto bx = x.view(tx).bytes(), by = y.view(ty).bytes();
        if (!std::equal(bx.begin(), bx.end(), by.begin(), by.end())) return tx.info->name + " differs";
    }
    return {};
}

// Measure, move the budget, quantize the allocation: the mix is a row of Results with its KL per
// layer, and Export writes it in the layouts that carry a mix (its per-module schemes read back by
// our reader, its codes those quantized) and refuses the others with the core's one line; the
// ct-mixed export equals, tensor for tensor, what quantscope-cli quantize --target-bpw writes for the
// same budget (RTN draws nothing at random, and both measure on the same texts, so the allocation
// and the codes are the same).
TEST_F(MixedPageTest, AQuantizedAllocationReachesResultsAndExportsAsTheCliDoes) {
    MainWindow window(MainWindow::Settings::Ignore);
    ModelChecker resultsChecker(window.resultsPage()->table());
    ASSERT_TRUE(window.openPath(kDemo));
    MixedPrecisionPage& page = *window.mixedPrecisionPage();
    page.setCandidates(QStringLiteral("rtn4,rtn8"));
    page.setSensitivity(pipeline::Sensitivity::GroupKl);
    page.setSampling(4, 64, 4);
    bool finished = false;
    std::shared_ptr<const pipeline::JobResult> quantized;
    QObject::connect(&page, &MixedPrecisionPage::measurementFinished, [&] { finished = true; });
    QObject::connect(&page, &MixedPrecisionPage::allocationsQuantized, [&](const auto& r) { quantized = r; });
    ASSERT_TRUE(page.measure());
    ASSERT_TRUE(waitUntil([&] { return finished; }, 120000)) << page.status().toStdString();
    ASSERT_GE(page.frontier().size(), 3u);
    page.budgetSlider()->setValue(int(page.frontier().size()) / 2);
    const pipeline::MixedAllocation chosen = *page.currentAllocation();
    const pipeline::MixedMethods allocation = page.planner()->methods(chosen, "expected");
    ASSERT_TRUE(page.quantizeAllocation());
    ASSERT_TRUE(waitUntil([&] { return quantized != nullptr; }, 120000)) << page.status().toStdString();

    // Results: the mix's row, under its name, with its measured KL and one KL per layer.
    ASSERT_EQ(window.resultsPage()->result(), quantized);
    ASSERT_EQ(quantized->methods.size(), 1u);
    const pipeline::MethodResult& mix = quantized->methods.front();
    EXPECT_TRUE(mix.mixed);
    const QString label = QStringLiteral("mixed %1 bpw").arg(chosen.bitsPerWeight, 0, 'f', 2);
    EXPECT_EQ(QString::fromStdString(mix.label()), label);
    const ResultsTableModel& table = *window.resultsPage()->table();
    ASSERT_EQ(table.rowCount(), 1);
    EXPECT_EQ(table.index(0, ResultsTableModel::MethodColumn).data().toString(), label);
    EXPECT_EQ(mix.kl.meanKld.value, page.measuredPoints().back().measuredKl);
    ASSERT_EQ(mix.perLayerKl.size(), 2u);  // the demo's two layers
    for (double v : mix.perLayerKl) EXPECT_TRUE(std::isfinite(v) && v > 0.0) << v;
    EXPECT_EQ(window.resultsPage()->klPerLayer()->lineCount(), 1);

    // Export: ct-mixed first; a layout that holds one method refuses the mix in the core's words.
    ExportPanel& exporter = *window.exportPanel();
    ASSERT_EQ(exporter.result(), quantized);
    ASSERT_TRUE(exporter.selectMethod(label));
    EXPECT_EQ(exporter.formatName(), QStringLiteral("ct-mixed"));
    QTemporaryDir scratch;
    exporter.setDestination(scratch.filePath(QStringLiteral("refused")));
    for (const char* refused : {"fp8", "bnb-nf4", "ct-nvfp4"}) {
        ASSERT_TRUE(exporter.selectFormat(QString::fromLatin1(refused))) << refused;
        ASSERT_TRUE(
            waitUntil([&] { return !exporter.isChecking(); }, 60000));  // a result on disk is checked on a worker
        const auto* encoder = &formats::encoderNamed(refused);
        EXPECT_EQ(exporter.problem().toStdString(), pipeline::exportRefusal(mix, *encoder)) << refused;
        EXPECT_TRUE(exporter.problem().startsWith(
            QStringLiteral("cannot export as %1: model.layers.").arg(QString::fromLatin1(refused))))
            << exporter.problem().toStdString();
        EXPECT_FALSE(exporter.problem().contains(QLatin1Char('\n')));
    }
    for (const char* format : {"ct-mixed", "gptq_v2"}) {
        SCOPED_TRACE(format);
        ASSERT_TRUE(exporter.selectFormat(QString::fromLatin1(format)));
        const QString out = scratch.filePath(QString::fromLatin1(format));
        const QString failure = exportTo(exporter, out);
        ASSERT_TRUE(failure.isEmpty()) << failure.toStdString();
        // Read back: each linear's scheme is the allocation's method, its codes those quantized.
        const io::Checkpoint written = io::Checkpoint::open(out.toStdString());
        const formats::LinearReader reader(written);
        EXPECT_FALSE(reader.format().uniformScheme().has_value());  // the mix is a mix on disk too
        int checked = 0;
        ASSERT_TRUE(mix.stored) << "the allocation's codes are on disk";
        for (int l = 0; l < 2; ++l) {
            const pipeline::QuantizedLayer quantizedLayer = pipeline::layerAt(mix, std::size_t(l));
            for (auto module : model::LayerWeights::kLinearModules) {
                const std::string prefix = pipeline::moduleName(l, module);
                const pipeline::MethodSpec* expected = allocation.methodOf(l, module);
                ASSERT_NE(expected, nullptr) << prefix;
                const auto info = std::find_if(reader.format().layers.begin(), reader.format().layers.end(),
                                               [&](const auto& i) { return i.ref.prefix == prefix; });
                ASSERT_NE(info, reader.format().layers.end()) << prefix;
                EXPECT_EQ(info->bits, expected->bits) << prefix;
                EXPECT_EQ(info->groupSize, expected->groupSize) << prefix;
                EXPECT_EQ(reader.decode(prefix).parts.codes, quantizedLayer.at(std::string(module))->codes) << prefix;
                ++checked;
            }
        }
        EXPECT_EQ(checked, 14);
    }

    // The CLI at the same budget, on the same texts and sampling.
    const QString cliOut = scratch.filePath(QStringLiteral("cli"));
    QProcess cli;
    cli.start(
        QStringLiteral(QS_CLI_EXE),
        {QStringLiteral("quantize"), kDemo, QStringLiteral("--target-bpw"), QString::number(chosen.targetBpw, 'g', 17),
         QStringLiteral("--candidates"), QStringLiteral("rtn4,rtn8"), QStringLiteral("--sensitivity"),
         QStringLiteral("group-kl"), QStringLiteral("--samples"), QStringLiteral("4"), QStringLiteral("--seq-len"),
         QStringLiteral("64"), QStringLiteral("--eval-samples"), QStringLiteral("4"), QStringLiteral("--out"), cliOut});
    ASSERT_TRUE(cli.waitForFinished(180000));
    ASSERT_EQ(cli.exitCode(), 0) << cli.readAllStandardError().toStdString();
    const std::string difference = firstDifference(scratch.filePath(QStringLiteral("ct-mixed")), cliOut);
    EXPECT_EQ(difference, "");
    // The report's settings: the same record of the budget, the allocation, the predicted and measured
    // KL and the texts; only the mix's name may differ (the CLI names it by its target, the tab by what
    // the allocation spends).
    const auto settingsOf = [](const QString& folder) {
        std::ifstream in(QDir(folder).filePath(QStringLiteral("quantscope_report.json")).toStdString());
        nlohmann::json settings = nlohmann::json::parse(in).at("settings");
        settings.erase("method");
        return settings;
    };
    const nlohmann::json gui = settingsOf(scratch.filePath(QStringLiteral("ct-mixed"))), fromCli = settingsOf(cliOut);
    EXPECT_EQ(gui, fromCli) << gui.dump(1) << "\n" << fromCli.dump(1);
    EXPECT_EQ(gui.at("mixed_precision").at("allocation"), pipeline::toJson(page.planner()->table(), chosen));

    // A second allocation of the same measurement joins the first: two rows, both exportable.
    page.budgetSlider()->setValue(page.budgetSlider()->maximum());
    const pipeline::MixedAllocation richest = *page.currentAllocation();
    quantized.reset();
    ASSERT_TRUE(page.quantizeAllocation());
    ASSERT_TRUE(waitUntil([&] { return quantized != nullptr; }, 120000)) << page.status().toStdString();
    ASSERT_EQ(quantized->methods.size(), 2u);
    EXPECT_EQ(window.resultsPage()->result(), quantized);
    EXPECT_EQ(table.rowCount(), 2);
    EXPECT_EQ(table.index(0, ResultsTableModel::MethodColumn).data().toString(), label);
    const QString second = QStringLiteral("mixed %1 bpw").arg(richest.bitsPerWeight, 0, 'f', 2);
    EXPECT_EQ(table.index(1, ResultsTableModel::MethodColumn).data().toString(), second);
    EXPECT_EQ(quantized->methods[1].kl.meanKld.value, page.measuredPoints().back().measuredKl);
    EXPECT_LT(quantized->methods[1].kl.meanKld.value,
              quantized->methods[0].kl.meanKld.value);  // more bits, less damage
    EXPECT_TRUE(exporter.selectMethod(label));
    EXPECT_TRUE(exporter.selectMethod(second));
    EXPECT_EQ(page.exportSettings(second.toStdString()).at("mixed_precision").at("target_bpw"), richest.targetBpw);
}

TEST_F(MixedPageTest, TheRulesTableRefusesWhatTheCliRefusesInOneLine) {
    MixedPrecisionPage page;
    page.setCheckpoint(demo());
    page.setCandidates(QStringLiteral("gptq4,gptq8"));
    page.setRules({{QStringLiteral("layers\\.1\\.mlp\\.down_proj"), QStringLiteral("gptq8")},
                   {QStringLiteral("o_proj"), QStringLiteral("dense")}});
    EXPECT_EQ(page.rulesProblem(), QString());
    const std::vector<std::pair<std::vector<std::pair<QString, QString>>, QString>> cases = {
        {{{QStringLiteral("lm_head"), QStringLiteral("dense")}},
         QStringLiteral("'lm_head' matches no quantized linear")},
        {{{QStringLiteral("down_proj"), QStringLiteral("gptq9")}}, QStringLiteral("gptq9")},
        {{{QStringLiteral("k_proj"), QStringLiteral("gptq8")}}, QStringLiteral("model.layers.0.self_attn.k_proj")},
        {{{QStringLiteral("down_proj("), QStringLiteral("gptq8")}}, QStringLiteral("down_proj(")},
    };
    for (const auto& [rows, expected] : cases) {
        page.setRules(rows);
        EXPECT_TRUE(page.rulesProblem().contains(expected)) << page.rulesProblem().toStdString();
        EXPECT_FALSE(page.rulesProblem().contains('\n'));
        EXPECT_FALSE(page.measure());  // refused before any work
        EXPECT_FALSE(page.isBusy());
        EXPECT_EQ(page.status(), page.rulesProblem());
    }
    // Typed into the table as a user does: the problem goes as the rule is corrected.
    page.setRules({{QStringLiteral("down_proj"), QStringLiteral("gptq9")}});
    page.rulesTable()->item(0, 1)->setText(QStringLiteral("gptq8"));
    EXPECT_EQ(page.rulesProblem(), QString());
    page.setCandidates(QStringLiteral("gptq4,gptq5x"));
    EXPECT_TRUE(page.rulesProblem().contains(QStringLiteral("gptq5x"))) << page.rulesProblem().toStdString();
}

}  // namespace
}  // namespace qs::gui::test
