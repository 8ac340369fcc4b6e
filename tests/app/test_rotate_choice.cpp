// The Quantize panel's "Rotate before quantizing" (the CLI's --rotate): off by default, kept with the panel's
// other settings, carried into the plan (its signs drawn from the panel's seed) and so into the job, whose
// result is marked rotated; a family that cannot fold the rotation is refused when the plan is built.
#include <QCheckBox>
#include <QSettings>
#include <QTemporaryDir>

#include "qs/error.h"

#include "jobs/quantize_job.h"
#include "jobs/quantize_settings.h"
#include "pages/results_page.h"
#include "panels/quantize_panel.h"
#include "qt_test_support.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

class RotateChoiceTest : public QtAppTest {
protected:
    void SetUp() override { window.show(); }

    QCheckBox* rotate() const { return window.quantizePanel()->findChild<QCheckBox*>(QStringLiteral("rotate")); }

    MainWindow window{MainWindow::Settings::Ignore};
};

TEST_F(RotateChoiceTest, OffByDefaultAndReachesThePlan) {
    ASSERT_NE(rotate(), nullptr);
    ASSERT_TRUE(window.openPath(kDemo));
    QuantizePanel& panel = *window.quantizePanel();
    ASSERT_TRUE(panel.selectMethods({"rtn4"}));
    EXPECT_FALSE(rotate()->isChecked());
    EXPECT_FALSE(rotate()->toolTip().isEmpty());
    EXPECT_FALSE(buildPlan(panel.settings(), kDemo.toStdString()).rotate);
    rotate()->setChecked(true);
    const pipeline::JobPlan plan = buildPlan(panel.settings(), kDemo.toStdString());
    EXPECT_TRUE(plan.rotate);
    EXPECT_EQ(plan.rotationSeed, panel.settings().seed);
    ASSERT_TRUE(waitUntil([&] { return !panel.isEstimating(); }));  // the estimate follows it
    ASSERT_TRUE(panel.estimatedSettings().has_value());
    EXPECT_TRUE(panel.estimatedSettings()->rotate);
}

TEST_F(RotateChoiceTest, IsKeptWithThePanelsSettings) {
    QuantizePanel& panel = *window.quantizePanel();
    rotate()->setChecked(true);
    QTemporaryDir dir;
    QSettings saved(dir.filePath(QStringLiteral("settings.ini")), QSettings::IniFormat);
    panel.saveSettings(saved);
    panel.restoreDefaults();
    EXPECT_FALSE(rotate()->isChecked());
    panel.restoreSettings(saved);
    EXPECT_TRUE(rotate()->isChecked());
    EXPECT_TRUE(panel.settings().rotate);
}

TEST_F(RotateChoiceTest, TheJobQuantizesRotated) {
    ASSERT_TRUE(window.openPath(kDemo));
    QuantizePanel& panel = *window.quantizePanel();
    ASSERT_TRUE(panel.selectMethods({"rtn4"}));
    panel.setSampling(2, 32, 1);
    rotate()->setChecked(true);
    QString failure;
    const auto connection =
        QObject::connect(window.quantizeJob(), &QuantizeJob::failed, [&](const QString& m) { failure = m; });
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitUntil([&] { return !window.quantizeJob()->isRunning(); }, 120000));
    QObject::disconnect(connection);
    EXPECT_TRUE(failure.isEmpty()) << failure.toStdString();
    const auto& result = window.resultsPage()->result();
    ASSERT_TRUE(result);
    EXPECT_TRUE(result->methods.front().rotationSeed.has_value());
}

TEST_F(RotateChoiceTest, AFamilyThatCannotFoldItIsRefused) {
    const QString gemma = QStringLiteral(QS_TEST_DATA_DIR "/gemma3/gemma3-text-tiny");
    QuantizeSettings settings;
    settings.methods = {{"rtn4", 32}};
    settings.rotate = true;
    EXPECT_THROW((void)buildPlan(settings, gemma.toStdString()), Error);
}

}  // namespace
}  // namespace qs::gui::test
