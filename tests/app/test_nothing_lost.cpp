// Nothing is lost by a click: opening another checkpoint or quitting while a job runs or results are
// shown asks first; after an export the panel says what it wrote (not, in red, that the folder
// exists); a missing parent folder is created; "Open for inspection" opens the export, names it and
// adds it to Open Recent; File ▸ Open accepts a checkpoint folder.
#include <QDir>
#include <QPushButton>
#include <QStatusBar>
#include <QTemporaryDir>

#include "qs/io/checkpoint.h"
#include "qs/pipeline/work_folder.h"

#include "export_support.h"
#include "jobs/quantize_job.h"
#include "jobs/run_cache.h"
#include "jobs/run_folder.h"
#include "jobs/run_plan.h"
#include "pages/results_page.h"
#include "panels/export_panel.h"
#include "panels/quantize_panel.h"
#include "qt_test_support.h"
#include "window/checkpoint_file_dialog.h"
#include "window/main_window.h"
#include "window/recent_files.h"

namespace qs::gui::test {
namespace {

class NothingLostTest : public QtAppTest {
protected:
    void SetUp() override {
        window.setConfirmation([this](const QString&, const QString& question) {
            questions << question;
            return answer;
        });
        window.show();
        ASSERT_TRUE(window.openPath(kDemo));
        window.quantizePanel()->setSampling(4, 32, 2);
        ASSERT_TRUE(window.quantizePanel()->selectMethods({"rtn4"}));
    }
    bool waitForJob() {
        return waitUntil([this] { return !window.quantizeJob()->isRunning(); }, 120000);
    }
    QPushButton* button(QWidget& parent, const QString& text) {
        for (QPushButton* b : parent.findChildren<QPushButton*>())
            if (b->text() == text) return b;
        return nullptr;
    }

    MainWindow window{MainWindow::Settings::Remember};  // Open Recent is kept (in the tests' own settings folder)
    QStringList questions;
    bool answer = false;
    QTemporaryDir scratch;
};

TEST_F(NothingLostTest, OpeningAnotherCheckpointAsksWhileAJobRunsOrResultsAreShown) {
    // Nothing to lose: no question.
    EXPECT_TRUE(window.requestOpen(kStories));
    EXPECT_TRUE(questions.isEmpty());
    ASSERT_TRUE(window.openPath(kDemo));

    ASSERT_TRUE(window.startQuantizeJob());
    EXPECT_FALSE(window.requestOpen(kStories));  // "no": the job goes on
    ASSERT_EQ(questions.size(), 1);
    EXPECT_TRUE(questions.back().contains(QStringLiteral("cancels the running quantization")));
    EXPECT_TRUE(window.quantizeJob()->isRunning() || window.resultsPage()->result());
    ASSERT_TRUE(waitForJob());
    ASSERT_TRUE(window.resultsPage()->result());

    EXPECT_FALSE(window.requestOpen(kStories));
    ASSERT_EQ(questions.size(), 2);
    EXPECT_TRUE(questions.back().contains(QStringLiteral("not exported")));
    EXPECT_TRUE(window.resultsPage()->result()) << "answered no, yet the results were cleared";

    answer = true;
    EXPECT_TRUE(window.requestOpen(kStories));
    EXPECT_FALSE(window.resultsPage()->result());
}

TEST_F(NothingLostTest, QuittingDuringAJobAsksFirst) {
    ASSERT_TRUE(window.startQuantizeJob());
    EXPECT_FALSE(window.close());
    EXPECT_TRUE(window.isVisible());
    ASSERT_EQ(questions.size(), 1);
    EXPECT_TRUE(questions.front().contains(QStringLiteral("quantization is running")));
    answer = true;
    EXPECT_TRUE(window.close());
    EXPECT_TRUE(waitForJob());
}

TEST_F(NothingLostTest, AnExportIntoAMissingFolderSaysWhatItWroteAndOpensForInspection) {
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitForJob());
    ExportPanel& exporter = *window.exportPanel();
    const QString destination = QDir(scratch.path()).filePath(QStringLiteral("not/yet/demo-rtn4"));
    exporter.setDestination(destination);
    ASSERT_TRUE(waitForCheck(exporter));  // the result is on disk: checked on the panel's worker
    EXPECT_TRUE(exporter.problem().isEmpty()) << exporter.problem().toStdString();
    EXPECT_TRUE(exporter.shownText().contains(QStringLiteral("does not exist yet: Export creates it")))
        << exporter.shownText().toStdString();
    QString failure;
    QObject::connect(&exporter, &ExportPanel::failed, [&](const QString& m) { failure = m; });
    exporter.startExport();
    ASSERT_TRUE(waitUntil([&] { return !exporter.isExporting(); }, 60000));
    ASSERT_TRUE(failure.isEmpty()) << failure.toStdString();
    EXPECT_TRUE(QFile::exists(QDir(destination).filePath(QStringLiteral("config.json"))));
    // The destination now exists because it was just written: said so, not "exists; choose a new folder".
    EXPECT_EQ(exporter.shownText(), QStringLiteral("Written to %1.").arg(destination));

    QPushButton* open = button(exporter, QStringLiteral("Open for inspection"));
    ASSERT_NE(open, nullptr);
    answer = true;
    open->click();
    EXPECT_EQ(window.checkpoint()->root().string(), destination.toStdString());
    EXPECT_TRUE(window.statusBar()->currentMessage().startsWith(QStringLiteral("Opened %1:").arg(destination)))
        << window.statusBar()->currentMessage().toStdString();
    EXPECT_EQ(RecentFiles().paths().value(0), destination);
}

// A run that died after its first layer (made here by the pipeline itself, stopped where a kill
// would have left it): Start offers to resume it, and the resumed run's result is the uninterrupted one's.
TEST_F(NothingLostTest, AnInterruptedRunIsOfferedForResumeAndEndsAsIfNeverInterrupted) {
    ASSERT_TRUE(window.quantizePanel()->selectMethods({"gptq4", "nvfp4"}));
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitForJob());
    ASSERT_TRUE(window.resultsPage()->result());
    auto uninterrupted = window.resultsPage()->result();
    EXPECT_TRUE(questions.isEmpty()) << "a finished run leaves nothing to resume";

    const QuantizeSettings settings = window.quantizePanel()->settings();
    const RunCache cache = RunCache::inUserCache();
    const std::string key = runKey(settings, io::fingerprintOf(io::Checkpoint::open(kDemo.toStdString())));
    // The folder of an interrupted run of these settings, as a killed process leaves it (not held).
    const auto interrupt = [&]() -> std::filesystem::path {
        std::shared_ptr<RunLease> lease = cache.startNew(key);
        const std::filesystem::path folder = lease->folder();
        pipeline::JobPlan plan = buildRunPlan(settings, kDemo.toStdString(), {lease, false});
        CancelToken stop;
        const auto afterLayer1 = [&stop](const Progress& p) {
            if (p.stage == "calibrate" && p.step == 2) stop.cancel();
        };
        EXPECT_THROW((void)pipeline::Job(std::move(plan)).run(afterLayer1, stop), Cancelled);
        EXPECT_EQ(pipeline::WorkFolder::interruptedLayers(folder), 1);
        return folder;
    };
    const std::filesystem::path interrupted = interrupt();
    answer = true;  // resume
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitForJob());
    ASSERT_EQ(questions.size(), 1);
    EXPECT_TRUE(questions.back().contains(QStringLiteral("stopped after finishing 1 layer")))
        << questions.back().toStdString();
    auto resumed = window.resultsPage()->result();
    ASSERT_TRUE(resumed);
    ASSERT_NE(resumed, uninterrupted);
    ASSERT_EQ(resumed->methods.size(), 2u);
    for (std::size_t m = 0; m < 2; ++m) {
        EXPECT_EQ(resumed->methods[m].kl.meanKld.value, uninterrupted->methods[m].kl.meanKld.value);
        ASSERT_TRUE(resumed->methods[m].stored) << "the GUI's results are on disk";
        EXPECT_EQ(resumed->methods[m].stored->folder(), interrupted) << "the resumed run's folder serves its result";
        EXPECT_EQ(pipeline::layerCount(resumed->methods[m]), 2u);
        EXPECT_EQ(pipeline::layerAt(resumed->methods[m], 0).at("mlp.down_proj")->codes,
                  pipeline::layerAt(uninterrupted->methods[m], 0).at("mlp.down_proj")->codes);
    }

    (void)interrupt();
    answer = false;  // start over: the old state goes, and the run still ends as it should
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitForJob());
    ASSERT_EQ(questions.size(), 2);
    ASSERT_TRUE(window.resultsPage()->result());
    EXPECT_EQ(window.resultsPage()->result()->methods[0].kl.meanKld.value, uninterrupted->methods[0].kl.meanKld.value);

    // The earlier results' folders go with their last holders: only the shown result's is left.
    const auto runsOfTheseSettings = [&] {
        int folders = 0;
        for (const auto& entry : std::filesystem::directory_iterator(cache.root()))
            folders += entry.is_directory() && entry.path().filename().string().starts_with(key);
        return folders;
    };
    EXPECT_EQ(runsOfTheseSettings(), 3);
    uninterrupted.reset();
    resumed.reset();
    EXPECT_EQ(runsOfTheseSettings(), 1);
    EXPECT_FALSE(std::filesystem::exists(interrupted));
}

TEST_F(NothingLostTest, FileOpenAcceptsACheckpointFolder) {
    CheckpointFileDialog dialog(nullptr, QDir(kDemo).absolutePath());
    dialog.selectFile(kDemo);
    dialog.accept();
    EXPECT_EQ(dialog.result(), QDialog::Accepted);
    EXPECT_EQ(QFileInfo(dialog.selectedFiles().value(0)).canonicalFilePath(), QFileInfo(kDemo).canonicalFilePath());

    // A folder without a checkpoint is navigated into, as before.
    CheckpointFileDialog browse(nullptr, scratch.path());
    QDir(scratch.path()).mkdir(QStringLiteral("empty"));
    browse.selectFile(QDir(scratch.path()).filePath(QStringLiteral("empty")));
    browse.accept();
    EXPECT_NE(browse.result(), QDialog::Accepted);
    EXPECT_FALSE(CheckpointFileDialog::isCheckpointFolder(QDir(scratch.path()).filePath(QStringLiteral("empty"))));
    EXPECT_TRUE(CheckpointFileDialog::isCheckpointFolder(kDemo));
}

}  // namespace
}  // namespace qs::gui::test
