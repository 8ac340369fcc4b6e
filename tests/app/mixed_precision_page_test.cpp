// The Mixed precision tab: the budget slider puts the allocator's answer for that budget on the heat
// map, within 100 ms a step on a 32-layer frontier; the event loop keeps turning (the 50 ms stall
// test) while a measurement pass runs; a quantized allocation lands on the plot beside its
// prediction; the rules table refuses what the CLI refuses, in one line.
#include <memory>
#include <string>
#include <vector>

#include <QElapsedTimer>
#include <QSlider>
#include <QTableWidget>
#include <QTest>

#include "mixed_allocation_map.h"
#include "mixed_precision_page.h"
#include "plot_view.h"
#include "qs/io/checkpoint.h"
#include "qs/pipeline/mixed_methods.h"
#include "qs/pipeline/mixed_precision_allocation.h"
#include "qt_test_support.h"
#include "sensitivity_tables.h"

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
        const int step = (i * 7) % int(frontier.size());   // jumps back and forth, as a drag does
        QElapsedTimer clock;
        clock.start();
        page.budgetSlider()->setValue(step);
        page.allocationMap()->repaint();
        QCoreApplication::processEvents();   // the plot's queued replot
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
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&page));   // the first paint is the window's own work
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
    EXPECT_EQ(page.plot()->graph(1)->dataCount(), 2);   // the uniform methods' measured points
    ASSERT_GE(page.frontier().size(), 3u);
    EXPECT_EQ(page.plot()->graph(0)->dataCount(), int(page.frontier().size()));

    // A point inside the frontier: some groups at rtn8, the rest at rtn4.
    page.budgetSlider()->setValue(int(page.frontier().size()) / 2);
    const pipeline::MixedAllocation chosen = *page.currentAllocation();
    ASSERT_TRUE(page.quantizeAllocation());
    ASSERT_TRUE(waitUntil([&] { return measured; }, 120000)) << page.status().toStdString();
    ASSERT_EQ(page.measuredPoints().size(), 1u);
    const auto& point = page.measuredPoints().front();
    EXPECT_NEAR(point.bitsPerWeight, chosen.bitsPerWeight, 1e-9);   // the bits the table predicted are those stored
    EXPECT_EQ(point.predictedKl, chosen.predictedKl);
    EXPECT_LT(point.measuredKl, t.uniformKl[0]);
    EXPECT_GT(point.measuredKl, t.uniformKl[1]);
    EXPECT_EQ(page.plot()->graph(2)->dataCount(), 1);
}

TEST_F(MixedPageTest, TheRulesTableRefusesWhatTheCliRefusesInOneLine) {
    MixedPrecisionPage page;
    page.setCheckpoint(demo());
    page.setCandidates(QStringLiteral("gptq4,gptq8"));
    page.setRules({{QStringLiteral("layers\\.1\\.mlp\\.down_proj"), QStringLiteral("gptq8")}, {QStringLiteral("o_proj"), QStringLiteral("dense")}});
    EXPECT_EQ(page.rulesProblem(), QString());
    const std::vector<std::pair<std::vector<std::pair<QString, QString>>, QString>> cases = {
        {{{QStringLiteral("lm_head"), QStringLiteral("dense")}}, QStringLiteral("'lm_head' matches no quantized linear")},
        {{{QStringLiteral("down_proj"), QStringLiteral("gptq9")}}, QStringLiteral("gptq9")},
        {{{QStringLiteral("k_proj"), QStringLiteral("gptq8")}}, QStringLiteral("model.layers.0.self_attn.k_proj")},
        {{{QStringLiteral("down_proj("), QStringLiteral("gptq8")}}, QStringLiteral("down_proj(")},
    };
    for (const auto& [rows, expected] : cases) {
        page.setRules(rows);
        EXPECT_TRUE(page.rulesProblem().contains(expected)) << page.rulesProblem().toStdString();
        EXPECT_FALSE(page.rulesProblem().contains('\n'));
        EXPECT_FALSE(page.measure());   // refused before any work
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
