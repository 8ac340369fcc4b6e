// The GUI's results on disk: a job run through QuantizeJob in a run folder keeps its codes there, the
// folder lives exactly as long as something holds the result, an export from it writes the bytes the
// in-RAM path writes, a folder removed under it fails the export with the core's line, two runs of
// the same settings do not share a folder, and the Quantize panel's estimate counts the codes on disk.
#include <filesystem>
#include <fstream>
#include <iterator>

#include <QTemporaryDir>

#include "qs/formats/linear_encoder.h"
#include "qs/io/checkpoint.h"
#include "qs/pipeline/job.h"

#include "export_support.h"
#include "jobs/folder_lock.h"
#include "jobs/quantize_job.h"
#include "jobs/run_cache.h"
#include "jobs/run_plan.h"
#include "pages/results_page.h"
#include "panels/export_panel.h"
#include "panels/quantize_panel.h"
#include "qt_test_support.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {
namespace fs = std::filesystem;

std::string bytesOf(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class ResultsOnDiskTest : public QtAppTest {
protected:
    static QuantizeSettings settings() {
        QuantizeSettings s;
        s.methods = {{"gptq4", 128}};
        s.samples = 4;
        s.sequenceLength = 32;
        s.evaluationSamples = 2;
        return s;
    }
    // Runs a job as the window does, in `folder` (none: in RAM), and waits for its result.
    static JobResultPtr run(RunFolder folder) {
        QuantizeJob job;
        JobResultPtr result;
        QString failure;
        QObject::connect(&job, &QuantizeJob::finished, [&](const JobResultPtr& r) { result = r; });
        QObject::connect(&job, &QuantizeJob::failed, [&](const QString& m) { failure = m; });
        EXPECT_TRUE(job.start(settings(), kDemo.toStdString(), std::move(folder)));
        EXPECT_TRUE(waitUntil([&] { return !job.isRunning() && (result || !failure.isEmpty()); }, 120000));
        EXPECT_TRUE(failure.isEmpty()) << failure.toStdString();
        return result;
    }
    // Exports the result's first method in its default layout through an Export panel.
    static QString exportThroughPanel(const JobResultPtr& result, const fs::path& destination) {
        ExportPanel panel;
        panel.setSource(kDemo, io::fingerprintOf(io::Checkpoint::open(kDemo.toStdString())));
        panel.setResult(result);
        return exportTo(panel, QString::fromStdString(destination.string()));
    }

    QTemporaryDir scratch;
    fs::path out = fs::path(scratch.path().toStdString());
    RunCache cache{out / "runs"};
};

TEST_F(ResultsOnDiskTest, AJobsCodesStayOnDiskExactlyAsLongAsItsResultIsHeld) {
    std::shared_ptr<RunLease> lease = cache.startNew("demo");
    const fs::path folder = lease->folder();
    JobResultPtr result = run({std::move(lease), false});
    ASSERT_TRUE(result);
    ASSERT_EQ(result->methods.size(), 1u);
    const pipeline::MethodResult& gptq = result->methods[0];
    ASSERT_TRUE(gptq.stored);
    EXPECT_TRUE(gptq.layers.empty()) << "the codes were kept in RAM too";
    EXPECT_EQ(gptq.stored->folder(), folder);
    EXPECT_EQ(pipeline::layerCount(gptq), 2u);
    for (const auto& [module, q] : pipeline::linearHeaders(gptq)[1]) EXPECT_TRUE(q->codes.empty()) << module;
    const pipeline::QuantizedLayer layer1 = pipeline::layerAt(gptq, 1);
    ASSERT_EQ(layer1.size(), 7u);
    for (const auto& [module, q] : layer1) EXPECT_EQ(q->codes.size(), std::size_t(q->rows * q->cols)) << module;
    EXPECT_TRUE(fs::exists(RunLease::finishedMarkerOf(folder)));
    EXPECT_FALSE(FolderLock::acquire(folder)) << "a shown result's folder is not marked in use";
    EXPECT_EQ(cache.cleanUp().folders, 0);
    EXPECT_FALSE(cache.takeInterrupted("demo")) << "a finished run was offered for resume";

    pipeline::MethodResult copy = result->methods[0];  // as a view or an export keeps it
    result.reset();
    EXPECT_TRUE(fs::exists(folder / "layer-0001"));
    EXPECT_EQ(pipeline::layerAt(copy, 0).size(), 7u);
    copy = {};
    EXPECT_FALSE(fs::exists(folder));
    EXPECT_TRUE(fs::is_empty(cache.root())) << "the marker or the lock file was left behind";
}

TEST_F(ResultsOnDiskTest, AnExportFromDiskWritesTheBytesOfTheInRamPath) {
    const JobResultPtr onDisk = run({cache.startNew("demo"), false});
    const JobResultPtr inRam = run({});
    ASSERT_TRUE(onDisk && inRam);
    ASSERT_TRUE(onDisk->methods[0].stored);
    ASSERT_FALSE(inRam->methods[0].stored);
    ASSERT_EQ(inRam->methods[0].layers.size(), 2u);
    EXPECT_EQ(onDisk->methods[0].kl.meanKld.value, inRam->methods[0].kl.meanKld.value);

    const QString diskFailure = exportThroughPanel(onDisk, out / "from-disk");
    ASSERT_TRUE(diskFailure.isEmpty()) << diskFailure.toStdString();
    const QString ramFailure = exportThroughPanel(inRam, out / "from-ram");
    ASSERT_TRUE(ramFailure.isEmpty()) << ramFailure.toStdString();
    const std::string fromDisk = bytesOf(out / "from-disk" / "model.safetensors");
    EXPECT_GT(fromDisk.size(), 10000u);
    EXPECT_TRUE(fromDisk == bytesOf(out / "from-ram" / "model.safetensors")) << "the two exports differ";
    EXPECT_EQ(bytesOf(out / "from-disk" / "config.json"), bytesOf(out / "from-ram" / "config.json"));
}

// A result on disk is read back layer by layer to find the layouts that hold it: on the panel's worker,
// not the GUI thread (a 70B result's codes are tens of gigabytes). Meanwhile the panel says so and
// Export waits; then it offers what an in-RAM result of the same run is offered.
TEST_F(ResultsOnDiskTest, TheExportPanelChecksAResultOnDiskOnItsWorker) {
    const JobResultPtr onDisk = run({cache.startNew("demo"), false});
    const JobResultPtr inRam = run({});
    ASSERT_TRUE(onDisk && onDisk->methods[0].stored && inRam);
    ExportPanel disk, ram;
    for (ExportPanel* panel : {&disk, &ram})
        panel->setSource(kDemo, io::fingerprintOf(io::Checkpoint::open(kDemo.toStdString())));
    disk.setResult(onDisk);
    ram.setResult(inRam);
    disk.setDestination(QString::fromStdString((out / "disk").string()));
    ram.setDestination(QString::fromStdString((out / "ram").string()));
    EXPECT_TRUE(disk.isChecking());
    EXPECT_TRUE(disk.problem().startsWith(QStringLiteral("Checking that"))) << disk.problem().toStdString();
    EXPECT_FALSE(ram.isChecking());
    ASSERT_TRUE(waitUntil([&] { return !disk.isChecking(); }, 60000));
    EXPECT_TRUE(disk.problem().isEmpty()) << disk.problem().toStdString();
    int offered = 0;
    for (const formats::LinearEncoder* e : formats::allEncoders()) {
        const QString name = QString::fromUtf8(e->name());
        const bool inRamOffered = ram.selectFormat(name);
        EXPECT_EQ(disk.selectFormat(name), inRamOffered) << e->name();
        offered += inRamOffered;
        ASSERT_TRUE(waitUntil([&] { return !disk.isChecking(); }, 60000));
        EXPECT_EQ(disk.problem().toStdString(), ram.problem().toStdString()) << e->name();
    }
    EXPECT_GE(offered, 2);  // gptq and at least one other layout take 4-bit GPTQ
    // A layout chosen again is not read again: its refusal (none, or the reason) is known.
    for (const formats::LinearEncoder* e : formats::allEncoders()) {
        if (!disk.selectFormat(QString::fromUtf8(e->name()))) continue;
        EXPECT_FALSE(disk.isChecking()) << e->name();
        EXPECT_EQ(disk.problem().toStdString(), ram.problem().toStdString()) << e->name();
    }
}

TEST_F(ResultsOnDiskTest, AFolderRemovedUnderTheResultFailsTheExportWithOneLine) {
    const JobResultPtr result = run({cache.startNew("demo"), false});
    ASSERT_TRUE(result && result->methods[0].stored);
    fs::remove_all(result->methods[0].stored->folder());  // the user emptied the cache
    const QString failure = exportThroughPanel(result, out / "export");
    EXPECT_TRUE(failure.contains(QStringLiteral("the finished layer is not there"))) << failure.toStdString();
    EXPECT_FALSE(failure.contains(QLatin1Char('\n')));
    EXPECT_FALSE(fs::exists(out / "export"));
}

TEST_F(ResultsOnDiskTest, TheEstimateCountsTheCodesOnDisk) {
    QuantizeSettings s = settings();
    s.methods = {{"gptq4", 128}, {"rtn8", 128}, {"fp8", 128}};
    const pipeline::ResourceEstimate onDisk = estimateRun(s, kDemo.toStdString());
    const pipeline::ResourceEstimate inRam = pipeline::Job(buildPlan(s, kDemo.toStdString())).estimate();
    // In RAM the three methods keep about 2.5 bytes per weight of the demo's 1.6 M (4 MB), and more
    // while unpacking; on disk only their scales stay. A megabyte of margin for the resident set,
    // which each estimate measures anew.
    EXPECT_LT(onDisk.peakBytes + (1u << 20), inRam.peakBytes);
}

// Through the window: the run cache in the user's cache folder, the views holding the results.
class ResultsOnDiskWindowTest : public QtAppTest {
protected:
    void SetUp() override {
        window.setConfirmation([this](const QString&, const QString& question) {
            questions << question;
            return true;
        });
        window.show();
        ASSERT_TRUE(window.openPath(kDemo));
        window.quantizePanel()->setSampling(4, 32, 2);
        ASSERT_TRUE(window.quantizePanel()->selectMethods({"rtn4"}));
    }
    JobResultPtr runInWindow() {
        if (!window.startQuantizeJob()) return nullptr;
        if (!waitUntil([this] { return !window.quantizeJob()->isRunning(); }, 120000)) return nullptr;
        return window.resultsPage()->result();
    }

    MainWindow window{MainWindow::Settings::Ignore};
    QStringList questions;
    QTemporaryDir scratch;
};

TEST_F(ResultsOnDiskWindowTest, TwoRunsOfTheSameSettingsWhileTheFirstResultIsShownBothWork) {
    JobResultPtr first = runInWindow();
    ASSERT_TRUE(first && first->methods[0].stored);
    const fs::path firstFolder = first->methods[0].stored->folder();
    JobResultPtr second = runInWindow();
    ASSERT_TRUE(second && second->methods[0].stored);
    const fs::path secondFolder = second->methods[0].stored->folder();
    EXPECT_NE(firstFolder, secondFolder);
    EXPECT_TRUE(questions.isEmpty()) << "a finished run was offered for resume: "
                                     << questions.join(QLatin1Char('\n')).toStdString();
    EXPECT_EQ(window.exportPanel()->result(), second);

    // The first result still reads its own codes (the window shows the second).
    const QString failure = exportTo(*window.exportPanel(), scratch.filePath(QStringLiteral("second")));
    ASSERT_TRUE(failure.isEmpty()) << failure.toStdString();
    ExportPanel panel;
    panel.setSource(kDemo, window.checkpoint() ? io::fingerprintOf(*window.checkpoint()) : io::CheckpointFingerprint{});
    panel.setResult(first);
    const QString firstFailure = exportTo(panel, scratch.filePath(QStringLiteral("first")));
    ASSERT_TRUE(firstFailure.isEmpty()) << firstFailure.toStdString();
    EXPECT_EQ(bytesOf(fs::path(scratch.filePath(QStringLiteral("first")).toStdString()) / "model.safetensors"),
              bytesOf(fs::path(scratch.filePath(QStringLiteral("second")).toStdString()) / "model.safetensors"));

    panel.setResult(nullptr);
    first.reset();
    EXPECT_FALSE(fs::exists(firstFolder)) << "nothing holds the first result, yet its folder stayed";
    second.reset();
    EXPECT_TRUE(fs::exists(secondFolder)) << "the shown result lost its codes";
    ASSERT_TRUE(window.openPath(kStories));  // closes the demo and its result
    EXPECT_FALSE(fs::exists(secondFolder));
}

}  // namespace
}  // namespace qs::gui::test
