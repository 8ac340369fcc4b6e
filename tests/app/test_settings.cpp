// Settings kept between sessions: the Quantize panel's methods, bits, groups, samples, texts and
// per-layer KL, and the dock layout, through QSettings (the tests' own temporary folder); View ▸
// Restore Defaults puts back what a first start shows.
#include <QAction>
#include <QCheckBox>
#include <QDockWidget>
#include <QFileInfo>
#include <QMenu>
#include <QSettings>
#include <QSpinBox>

#include "jobs/quantize_job.h"
#include "models/results_table_model.h"
#include "pages/column_chooser.h"
#include "pages/results_page.h"
#include "panels/quantize_panel.h"
#include "qt_test_support.h"
#include "quantized_demo.h"
#include "window/error_reporter.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

class SettingsTest : public QtAppTest {
protected:
    void SetUp() override { QSettings().clear(); }
    void TearDown() override { QSettings().clear(); }

    static QDockWidget* dock(MainWindow& window, const QString& name) { return window.findChild<QDockWidget*>(name); }

    // A user's own choices: each differs from the panel's defaults. gptq3 needs the GPTQ row's bits at
    // 3 and trellis4 the second Trellis row's at 4 before they can be ticked by name.
    static void choose(QuantizePanel& panel) {
        QVariantMap state = panel.state();
        state[QStringLiteral("methods/gptq#0/bits")] = 3;
        state[QStringLiteral("methods/gptq#0/group")] = 64;
        state[QStringLiteral("methods/trellis#1/bits")] = 4;
        state[QStringLiteral("calibrationFile")] = QStringLiteral("/data/calib.txt");
        panel.applyState(state);
        ASSERT_TRUE(panel.selectMethods({"gptq3", "awq4", "trellis4", "nvfp4"}));
        panel.setSampling(48, 256, 12);
        panel.setPerLayerKl(true);
        auto* kvCache = panel.findChild<QCheckBox*>(QStringLiteral("kvCacheFp8"));
        ASSERT_NE(kvCache, nullptr);
        kvCache->setChecked(!kvCache->isChecked());
    }
};

TEST_F(SettingsTest, TheQuantizePanelAndTheDocksAreAsTheLastSessionLeftThem) {
    QuantizeSettings chosen;
    {
        MainWindow first(MainWindow::Settings::Remember);
        first.show();
        choose(*first.quantizePanel());
        chosen = first.quantizePanel()->settings();
        dock(first, QStringLiteral("moduleLogDock"))->hide();
        first.close();
    }
    ASSERT_EQ(chosen.methods.size(), 4u);
    EXPECT_EQ(chosen.methods[0], (MethodChoice{"gptq3", 64}));

    MainWindow second(MainWindow::Settings::Remember);
    second.show();
    EXPECT_EQ(second.quantizePanel()->settings(), chosen);
    EXPECT_FALSE(dock(second, QStringLiteral("moduleLogDock"))->isVisible());

    // Restore Defaults: what a window that remembers nothing starts with.
    const MainWindow fresh(MainWindow::Settings::Ignore);
    second.restoreDefaults();
    EXPECT_EQ(second.quantizePanel()->settings(), fresh.quantizePanel()->settings());
    EXPECT_NE(second.quantizePanel()->settings(), chosen);
    EXPECT_TRUE(dock(second, QStringLiteral("moduleLogDock"))->isVisible());
}

// The Results table's columns: the median hidden at first, shown from the header's menu, as the last session
// left it, and hidden again by Restore Defaults.
TEST_F(SettingsTest, TheResultsColumnsAreAsTheLastSessionLeftThem) {
    const auto shown = [](MainWindow& window, int column) { return window.resultsPage()->columns()->isShown(column); };
    {
        MainWindow first(MainWindow::Settings::Remember);
        first.show();
        EXPECT_FALSE(shown(first, ResultsTableModel::MedianColumn));
        QMenu* menu = first.resultsPage()->columns()->menu(&first);
        QStringList entries;
        for (QAction* action : menu->actions()) {
            entries << action->text();
            if (action->text() == QStringLiteral("median")) action->trigger();  // shown
            if (action->text() == QStringLiteral("time")) action->trigger();    // hidden
        }
        EXPECT_EQ(entries.size(), ResultsTableModel::ColumnCount - 1) << "every column but the method's";
        EXPECT_FALSE(entries.contains(QStringLiteral("method")));
        EXPECT_TRUE(shown(first, ResultsTableModel::MedianColumn));
        EXPECT_FALSE(shown(first, ResultsTableModel::TimeColumn));
        first.close();
    }
    MainWindow second(MainWindow::Settings::Remember);
    second.show();
    EXPECT_TRUE(shown(second, ResultsTableModel::MedianColumn));
    EXPECT_FALSE(shown(second, ResultsTableModel::TimeColumn));
    EXPECT_TRUE(shown(second, ResultsTableModel::MeanColumn));
    second.restoreDefaults();
    EXPECT_FALSE(shown(second, ResultsTableModel::MedianColumn));
    EXPECT_TRUE(shown(second, ResultsTableModel::TimeColumn));
    MainWindow ignoring(MainWindow::Settings::Ignore);
    EXPECT_FALSE(shown(ignoring, ResultsTableModel::MedianColumn));
}

// The tab is remembered by its page, not its index: the tabs shown only for some checkpoints (GGUF, Side by side,
// Importance) move the others, and an index would land on another page.
TEST_F(SettingsTest, TheTabIsRememberedByItsPage) {
    {
        MainWindow first(MainWindow::Settings::Remember);
        first.show();
        ASSERT_TRUE(first.openPath(quantizedDemo(QStringLiteral("q4_k_m"))));  // the GGUF tab shown before Results
        ASSERT_TRUE(first.showPage(QStringLiteral("results")));
        first.close();
    }
    EXPECT_EQ(QSettings().value(QStringLiteral("window/page")).toString(), QStringLiteral("results"));
    MainWindow second(MainWindow::Settings::Remember);
    second.show();
    EXPECT_EQ(second.currentPage(), static_cast<InspectorPage*>(second.resultsPage()));
}

TEST_F(SettingsTest, AWindowThatIgnoresSettingsNeitherReadsNorWritesThem) {
    {
        MainWindow remembering(MainWindow::Settings::Remember);
        choose(*remembering.quantizePanel());
        remembering.close();
    }
    const QStringList saved = QSettings().allKeys();
    EXPECT_TRUE(saved.contains(QStringLiteral("quantize/samples"))) << saved.join(QLatin1Char(' ')).toStdString();
    MainWindow screenshot(MainWindow::Settings::Ignore);
    EXPECT_EQ(screenshot.quantizePanel()->settings(),
              MainWindow(MainWindow::Settings::Ignore).quantizePanel()->settings());
    EXPECT_NE(screenshot.quantizePanel()->settings().samples, 48);
    screenshot.quantizePanel()->setSampling(7, 64, 3);
    screenshot.close();
    EXPECT_EQ(QSettings().value(QStringLiteral("quantize/samples")).toInt(), 48);
}

// A session that is killed, not quit, keeps the settings of the last job it started.
TEST_F(SettingsTest, TheQuantizePanelIsSavedWhenAJobStarts) {
    MainWindow remembering(MainWindow::Settings::Remember);
    ASSERT_TRUE(remembering.openPath(kDemo));
    ASSERT_TRUE(remembering.quantizePanel()->selectMethods({"rtn4"}));
    remembering.quantizePanel()->setSampling(5, 32, 2);
    EXPECT_FALSE(QSettings().contains(QStringLiteral("quantize/samples")));
    ASSERT_TRUE(remembering.startQuantizeJob());
    EXPECT_EQ(QSettings().value(QStringLiteral("quantize/samples")).toInt(), 5);
    EXPECT_EQ(QSettings().value(QStringLiteral("quantize/methods/rtn#0/checked")).toBool(), true);
    remembering.quantizeJob()->cancel();
    EXPECT_TRUE(waitUntil([&] { return !remembering.isBusy(); }, 60000));
}

// File ▸ Compare with Original…'s dialog starts beside the open checkpoint: an original it accepted is
// not remembered as the next start (that put the dialog inside the demo's folder, among the app's
// resources), and neither a refused nor an accepted original writes a setting.
TEST_F(SettingsTest, TheOriginalsDialogStartsBesideTheCheckpointAndRemembersNothing) {
    class Quiet : public ErrorReporter {
    public:
        void report(const QString&, const QString&) override { ++count; }
        int count = 0;
    };
    const auto quiet = std::make_shared<Quiet>();
    MainWindow remembering(MainWindow::Settings::Remember);
    remembering.setErrorReporter(quiet);
    const QString fp8 = quantizedDemo(QStringLiteral("fp8"));
    ASSERT_TRUE(remembering.openPath(fp8));
    const QStringList before = QSettings().allKeys();
    EXPECT_FALSE(remembering.compareWithOriginal(kStories));
    EXPECT_EQ(quiet->count, 1);
    EXPECT_TRUE(remembering.compareWithOriginal(kDemo));
    EXPECT_EQ(remembering.originalDialogFolder(), QFileInfo(fp8).absolutePath());
    EXPECT_NE(remembering.originalDialogFolder(), kDemo);
    EXPECT_EQ(QSettings().allKeys(), before);
}

}  // namespace
}  // namespace qs::gui::test
