// The Quantize panel's "Calibrate every expert on every token" (the CLI's --moe-calibration): shown for a
// mixture of experts only, on by default, kept with the panel's other settings, and carried into the
// plan and so into the job: routed-only, each expert's Hessian counts exactly the tokens routed to it;
// all experts, every calibration token.
#include <QCheckBox>
#include <QSettings>
#include <QTemporaryDir>

#include "jobs/quantize_job.h"
#include "jobs/quantize_settings.h"
#include "models/module_log_model.h"
#include "pages/results_page.h"
#include "panels/quantize_panel.h"
#include "qt_test_support.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

const QString kQwen3Moe = QStringLiteral(QS_TEST_DATA_DIR "/moe/qwen3-moe-tiny");

class MoeCalibrationChoiceTest : public QtAppTest {
protected:
    void SetUp() override { window.show(); }

    QCheckBox* allExperts() const {
        return window.quantizePanel()->findChild<QCheckBox*>(QStringLiteral("moeCalibrateAllExperts"));
    }

    // Runs gptq4 on the tiny Qwen3-MoE with the panel as it is; the result's expert rows.
    std::vector<pipeline::ModuleLog> runExperts() {
        QuantizePanel& panel = *window.quantizePanel();
        EXPECT_TRUE(panel.selectMethods({"gptq4"}));
        panel.setSampling(4, 32, 2);
        QString failure;
        const auto connection =
            QObject::connect(window.quantizeJob(), &QuantizeJob::failed, [&](const QString& m) { failure = m; });
        EXPECT_TRUE(window.startQuantizeJob());
        EXPECT_TRUE(waitUntil([&] { return !window.quantizeJob()->isRunning(); }, 120000));
        QObject::disconnect(connection);
        EXPECT_TRUE(failure.isEmpty()) << failure.toStdString();
        std::vector<pipeline::ModuleLog> experts;
        const auto& result = window.resultsPage()->result();
        if (!result) return experts;
        for (const pipeline::ModuleLog& row : result->methods.front().modules)
            if (row.routedTokens >= 0) experts.push_back(row);
        return experts;
    }

    MainWindow window{MainWindow::Settings::Ignore};
};

TEST_F(MoeCalibrationChoiceTest, ShownForExpertsOnlyAndOnByDefault) {
    ASSERT_NE(allExperts(), nullptr);
    ASSERT_TRUE(window.openPath(kQwen3Moe));
    QuantizePanel& panel = *window.quantizePanel();
    EXPECT_TRUE(allExperts()->isVisibleTo(&panel));
    EXPECT_TRUE(allExperts()->isEnabled());
    EXPECT_TRUE(allExperts()->isChecked());
    EXPECT_FALSE(allExperts()->toolTip().isEmpty());
    EXPECT_TRUE(panel.settings().moeCalibrateAllExperts);

    allExperts()->setChecked(false);
    ASSERT_TRUE(window.openPath(kStories));  // a dense model: hidden, and its plan is the default
    EXPECT_FALSE(allExperts()->isVisibleTo(&panel));
    EXPECT_TRUE(panel.settings().moeCalibrateAllExperts);
    ASSERT_TRUE(window.openPath(kQwen3Moe));  // the choice made for experts is still there
    EXPECT_TRUE(allExperts()->isVisibleTo(&panel));
    EXPECT_FALSE(panel.settings().moeCalibrateAllExperts);
}

TEST_F(MoeCalibrationChoiceTest, ReachesThePlan) {
    ASSERT_TRUE(window.openPath(kQwen3Moe));
    QuantizePanel& panel = *window.quantizePanel();
    ASSERT_TRUE(panel.selectMethods({"gptq4"}));
    EXPECT_TRUE(buildPlan(panel.settings(), kQwen3Moe.toStdString()).moeCalibrateAllExperts);
    allExperts()->setChecked(false);
    EXPECT_FALSE(buildPlan(panel.settings(), kQwen3Moe.toStdString()).moeCalibrateAllExperts);
    // The estimate follows it like every other setting.
    ASSERT_TRUE(waitUntil([&] { return !panel.isEstimating(); }));
    ASSERT_TRUE(panel.estimatedSettings().has_value());
    EXPECT_FALSE(panel.estimatedSettings()->moeCalibrateAllExperts);
}

TEST_F(MoeCalibrationChoiceTest, IsKeptWithThePanelsSettings) {
    ASSERT_TRUE(window.openPath(kQwen3Moe));
    QuantizePanel& panel = *window.quantizePanel();
    allExperts()->setChecked(false);
    QTemporaryDir dir;
    QSettings saved(dir.filePath(QStringLiteral("settings.ini")), QSettings::IniFormat);
    panel.saveSettings(saved);
    panel.restoreDefaults();
    EXPECT_TRUE(allExperts()->isChecked());
    panel.restoreSettings(saved);
    EXPECT_FALSE(allExperts()->isChecked());
    EXPECT_FALSE(panel.settings().moeCalibrateAllExperts);
}

// What the job did with it: routed-only, an expert's Hessian rows are its routed tokens; all experts,
// every calibration token, more than the router sent most experts.
TEST_F(MoeCalibrationChoiceTest, TheJobCalibratesAsChosen) {
    ASSERT_TRUE(window.openPath(kQwen3Moe));
    allExperts()->setChecked(false);
    const std::vector<pipeline::ModuleLog> routed = runExperts();
    ASSERT_FALSE(routed.empty());
    for (const pipeline::ModuleLog& row : routed)
        EXPECT_EQ(row.samples, row.routedTokens) << row.layer << " " << row.module;

    allExperts()->setChecked(true);
    const std::vector<pipeline::ModuleLog> all = runExperts();
    ASSERT_EQ(all.size(), routed.size());
    const auto tokens = static_cast<std::int64_t>(window.resultsPage()->result()->calibrationTokens);
    int fewerRouted = 0;
    for (const pipeline::ModuleLog& row : all) {
        EXPECT_EQ(row.samples, tokens) << row.layer << " " << row.module;
        fewerRouted += row.routedTokens < tokens;
    }
    EXPECT_GT(fewerRouted, 0);  // the router chose 2 of 4 experts per token: most saw fewer
}

}  // namespace
}  // namespace qs::gui::test
