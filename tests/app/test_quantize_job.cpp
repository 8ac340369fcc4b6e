// The quantization half of the window on the bundled demo Qwen3: the panel's estimate, a small job
// through the worker QThread into the results views, cancellation and the event loop's latency.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QLineEdit>
#include <QMouseEvent>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QTimer>

#include "export_support.h"
#include "jobs/quantize_job.h"
#include "models/module_log_model.h"
#include "models/results_table_model.h"
#include "pages/results_page.h"
#include "panels/export_panel.h"
#include "panels/job_status_widget.h"
#include "panels/quantize_panel.h"
#include "plot_click.h"
#include "plots/kl_per_layer_plot.h"
#include "plots/kl_per_method_plot.h"
#include "plots/output_error_plot.h"
#include "qt_test_support.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

class QuantizeJobTest : public QtAppTest {
protected:
    void SetUp() override {
        window.show();
        ASSERT_TRUE(window.openPath(kDemo));
        panel().setSampling(4, 64, 4);
        QObject::connect(window.quantizeJob(), &QuantizeJob::finished, [this](const JobResultPtr& r) { result = r; });
        QObject::connect(window.quantizeJob(), &QuantizeJob::failed, [this](const QString& m) { failure = m; });
    }

    QuantizePanel& panel() { return *window.quantizePanel(); }
    bool waitForJob(int timeoutMs = 120000) {
        return waitUntil([this] { return !window.quantizeJob()->isRunning(); }, timeoutMs);
    }
    MainWindow window{MainWindow::Settings::Ignore};
    ModelChecker logChecker{window.moduleLog()};
    ModelChecker resultsChecker{window.resultsPage()->table()};
    JobResultPtr result;
    QString failure;
};

TEST_F(QuantizeJobTest, ThePanelShowsAnEstimateBeforeStart) {
    ASSERT_TRUE(panel().selectMethods({"rtn4", "fp8"}));
    ASSERT_TRUE(waitUntil([this] { return panel().estimate().has_value() && !panel().isEstimating(); }));
    const pipeline::ResourceEstimate small = *panel().estimate();
    EXPECT_GT(small.peakBytes, 0u);
    EXPECT_GT(small.seconds, 0.0);
    EXPECT_TRUE(panel().estimateText().contains(QStringLiteral("Predicted peak memory")));
    EXPECT_FALSE(window.quantizeJob()->isRunning());
    // CUDA can be chosen exactly when the build has the CUDA backend (quantscope_gui's public define)
    // and Auto would pick its device, i.e. a GPU is present and passed its check against the CPU.
    ASSERT_TRUE(waitUntil([this] { return window.deviceProbe()->isDone(); }));
#if defined(QS_WITH_CUDA_BACKEND)
    EXPECT_EQ(panel().cudaSelectable(), pipeline::selectBackend(pipeline::DeviceChoice::Auto).backend->isCuda());
#else
    EXPECT_FALSE(panel().cudaSelectable());
#endif

    // More work is predicted to take longer: the estimate follows the settings.
    panel().setSampling(64, 128, 16);
    panel().setPerLayerKl(true);
    ASSERT_TRUE(waitUntil([this] { return !panel().isEstimating(); }));
    ASSERT_TRUE(panel().estimate().has_value());
    EXPECT_GT(panel().estimate()->seconds, small.seconds);
}

// The panel's estimate, as the issue saw it move (4.9 s and 49 s for one plan; 4.1 s at 16 samples,
// 0.6 s at 64): the same plan estimated again gives the same time, more samples never less.
TEST_F(QuantizeJobTest, ThePanelsEstimateIsStableAndGrowsWithTheSamples) {
    ASSERT_TRUE(panel().selectMethods({"gptq4", "fp8"}));
    const auto secondsFor = [this](int samples) {
        panel().setSampling(samples, 128, 8);
        const bool settled = waitUntil([this] {
            return !panel().isEstimating() && panel().estimatedSettings() == panel().settings() &&
                   panel().estimate().has_value();
        });
        EXPECT_TRUE(settled) << samples << " samples";
        return settled ? panel().estimate()->seconds : -1.0;
    };
    const double first = secondsFor(16);
    ASSERT_GT(first, 0.0);
    double previous = first;
    for (const int samples : {32, 64, 128}) {
        const double seconds = secondsFor(samples);
        EXPECT_GT(seconds, previous) << samples << " samples";
        previous = seconds;
    }
    EXPECT_EQ(secondsFor(16), first);
}

// Every control of the panel changes the plan; each change, alone, must bring an estimate of the
// new settings. The controls are found as the user meets them, so one added later without its
// connection fails here too.
TEST_F(QuantizeJobTest, EverySettingReEstimates) {
    const auto settled = [this] {
        return waitUntil([this] { return !panel().isEstimating() && panel().estimatedSettings().has_value(); });
    };
    // Every method checked first, so that each one's bits and group size are part of the plan.
    ASSERT_TRUE(panel().selectMethods({"rtn4", "gptq4", "gptq4-act", "awq4", "fp8", "mxfp4", "nvfp4", "nf4", "trellis2",
                                       "trellis3", "q4_k_m", "q5_k_m", "q6_k", "q8_0"}));
    ASSERT_TRUE(settled());
    ASSERT_TRUE(panel().estimatedSettings() == panel().settings());
    int changed = 0;
    const auto expectReEstimated = [&](QWidget* control) {
        ++changed;
        const QuantizeSettings now = panel().settings();
        ASSERT_TRUE(settled());
        EXPECT_TRUE(panel().estimatedSettings() == now) << control->metaObject()->className() << " #" << changed;
        // --rotate included: every method of this plan, the GGUF methods too, quantizes the rotated demo.
        EXPECT_TRUE(panel().estimate().has_value()) << panel().estimateText().toStdString();
    };
    for (QSpinBox* spin : panel().findChildren<QSpinBox*>()) {
        spin->setValue(spin->value() < spin->maximum() ? spin->value() + 1 : spin->value() - 1);
        expectReEstimated(spin);
    }
    for (QComboBox* box : panel().findChildren<QComboBox*>()) {
        const auto* items = qobject_cast<const QStandardItemModel*>(box->model());
        int next = box->currentIndex();
        do next = (next + 1) % box->count();
        while (items && !items->item(next)->isEnabled());  // CUDA without a device cannot be chosen
        ASSERT_NE(next, box->currentIndex());
        box->setCurrentIndex(next);
        expectReEstimated(box);
    }
    const QString texts[] = {kDemo + QStringLiteral("/calibration.txt"), kDemo + QStringLiteral("/eval.txt")};
    QList<QLineEdit*> edits = panel().findChildren<QLineEdit*>();
    edits.removeIf([](QLineEdit* e) { return qobject_cast<QAbstractSpinBox*>(e->parentWidget()) != nullptr; });
    ASSERT_EQ(edits.size(), 2);  // the calibration and evaluation files (not the spin boxes' own editors)
    for (int i = 0; i < 2; ++i) {
        edits[i]->setText(texts[i]);
        expectReEstimated(edits[i]);
    }
    for (QCheckBox* check : panel().findChildren<QCheckBox*>()) {
        check->toggle();  // one method off at a time, then back: the plan keeps its other methods
        expectReEstimated(check);
        check->toggle();
        expectReEstimated(check);
    }
    // 3 sampling and 7 bits spin boxes, 5 group sizes, the device and the matmuls, 2 texts, 18 methods (4 of
    // them GGUF types, 3 with quantized inputs), per-layer KL, the FP8 KV cache, the rotation, calibrating
    // every expert (hidden for this dense model) and weighing by an imatrix (hidden until one is open), both
    // connected all the same.
    EXPECT_EQ(changed, 10 + 7 + 2 + 2 * 23);
}

TEST_F(QuantizeJobTest, ASmallJobDrawsOneKlBarPerMethodAndItsLayers) {
    ASSERT_TRUE(panel().selectMethods({"rtn4", "fp8"}));
    panel().setPerLayerKl(true);
    QStringList statusTexts;
    QObject::connect(window.quantizeJob(), &QuantizeJob::progressed,
                     [&](const qs::Progress&) { statusTexts << window.jobStatus()->text(); });
    ASSERT_TRUE(window.startQuantizeJob());
    EXPECT_TRUE(window.isBusy());
    ASSERT_TRUE(waitForJob());
    ASSERT_TRUE(failure.isEmpty()) << failure.toStdString();
    ASSERT_TRUE(result);
    ASSERT_EQ(result->methods.size(), 2u);

    ResultsPage& page = *window.resultsPage();
    EXPECT_EQ(page.result(), result);
    EXPECT_EQ(window.currentPage(), &page);
    EXPECT_EQ(page.klPerMethod()->barCount(), 2);
    EXPECT_EQ(page.table()->rowCount(), 2);
    EXPECT_EQ(page.klPerLayer()->lineCount(), 2);
    EXPECT_TRUE(page.klPerLayer()->isVisible());
    // 8-bit FP8 stays closer to the original than 4-bit RTN, overall and in every layer.
    const auto& rtn = result->methods[0];
    const auto& fp8 = result->methods[1];
    EXPECT_LT(fp8.kl.meanKld.value, rtn.kl.meanKld.value);
    ASSERT_EQ(rtn.perLayerKl.size(), 2u);
    for (std::size_t l = 0; l < 2; ++l) EXPECT_LT(fp8.perLayerKl[l], rtn.perLayerKl[l]);
    // The log axis spans every point with a factor 3 of margin (PlotView::fitLogValueAxis).
    const QCPRange yRange = page.klPerLayer()->yAxis->range();
    const double lowest = std::min(fp8.perLayerKl[0], fp8.perLayerKl[1]);
    const double highest = std::max(rtn.perLayerKl[0], rtn.perLayerKl[1]);
    EXPECT_NEAR(yRange.lower, lowest / 3.0, 1e-6 * lowest);
    EXPECT_NEAR(yRange.upper, highest * 3.0, 1e-6 * highest);
    // The log dock got every module of every layer of both methods (7 linears per Qwen3 layer).
    EXPECT_EQ(window.moduleLog()->rowCount(), 2 * 2 * 7);
    EXPECT_EQ(page.outputError()->linears().size(), 14u);
    // The status bar said which layer of how many, and the time left.
    EXPECT_TRUE(std::any_of(statusTexts.begin(), statusTexts.end(), [](const QString& t) {
        return t.contains(QStringLiteral("layer 2/2")) && t.contains(QStringLiteral("ETA"));
    })) << statusTexts.join(QStringLiteral("\n")).toStdString();
    EXPECT_FALSE(window.jobStatus()->isVisible());

    // A click on layer 1 of the per-layer plot selects a linear of layer 1 in the tree.
    clickPlot(*page.klPerLayer(), 1.0, rtn.perLayerKl[1]);
    EXPECT_TRUE(window.currentTensor().startsWith(QStringLiteral("model.layers.1.")))
        << window.currentTensor().toStdString();
    // A point of the output-error plot selects that very linear.
    const auto& linears = page.outputError()->linears();
    const auto downProj = std::find_if(linears.begin(), linears.end(),
                                       [](const auto& l) { return l.layer == 0 && l.module == "mlp.down_proj"; });
    ASSERT_NE(downProj, linears.end());
    clickPlot(*page.outputError(), static_cast<double>(downProj - linears.begin()), 1e-2);
    EXPECT_EQ(window.currentTensor(), QStringLiteral("model.layers.0.mlp.down_proj.weight"));
}

TEST_F(QuantizeJobTest, ExportWritesTheChosenResultAndRefusesTheSourceFolder) {
    ASSERT_TRUE(panel().selectMethods({"rtn4", "fp8"}));
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitForJob());
    ASSERT_TRUE(result);
    ExportPanel& exporter = *window.exportPanel();
    ASSERT_TRUE(exporter.selectMethod(QString::fromStdString(result->methods[1].method.label())));
    EXPECT_FALSE(exporter.formatText().isEmpty());
    exporter.setDestination(QDir(kDemo).filePath(QStringLiteral("fp8-out")));
    EXPECT_TRUE(exporter.problem().contains(QStringLiteral("source"))) << exporter.problem().toStdString();
    QTemporaryDir scratch;
    const QString destination = scratch.filePath(QStringLiteral("demo-fp8"));
    const QString failure = exportTo(exporter, destination);
    ASSERT_TRUE(failure.isEmpty()) << failure.toStdString();
    EXPECT_FALSE(exporter.written().isEmpty());
    EXPECT_TRUE(QFile::exists(QDir(destination).filePath(QStringLiteral("config.json"))));
    // The size the panel gave is the file the export wrote (measured before writing), not "about" an estimate.
    ASSERT_TRUE(waitUntil([&] { return exporter.measuredSize().has_value(); }, 60000));
    EXPECT_EQ(
        exporter.measuredSize()->tensorFiles,
        static_cast<std::uint64_t>(QFileInfo(QDir(destination).filePath(QStringLiteral("model.safetensors"))).size()));
    EXPECT_FALSE(exporter.sizeText().startsWith(QStringLiteral("about"))) << exporter.sizeText().toStdString();
    EXPECT_FALSE(QFile::exists(QDir(kDemo).filePath(QStringLiteral("fp8-out"))));

    // Another result chosen: the folder just written is not its destination, and "Open for inspection"
    // (which opens what was written) is not offered for it; chosen again, it is.
    QPushButton* open = nullptr;
    for (QPushButton* b : exporter.findChildren<QPushButton*>())
        if (b->text() == QStringLiteral("Open for inspection")) open = b;
    ASSERT_NE(open, nullptr);
    EXPECT_FALSE(open->isHidden());
    ASSERT_TRUE(exporter.selectMethod(QString::fromStdString(result->methods[0].method.label())));
    EXPECT_TRUE(open->isHidden());
    EXPECT_TRUE(exporter.problem().contains(QStringLiteral("Choose a destination")))
        << exporter.problem().toStdString();
    ASSERT_TRUE(exporter.selectMethod(QString::fromStdString(result->methods[1].method.label())));
    EXPECT_FALSE(open->isHidden());
}

TEST_F(QuantizeJobTest, AGgufMethodStandsBesideGptqAndExportsAsAGgufFile) {
    ASSERT_TRUE(panel().selectMethods({"gptq4", "q4_k_m"}));
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitForJob());
    ASSERT_TRUE(failure.isEmpty()) << failure.toStdString();
    ASSERT_TRUE(result);
    ASSERT_EQ(result->methods.size(), 2u);
    const auto& q4km = result->methods[1];
    EXPECT_EQ(q4km.method.label(), "GGUF Q4_K_M");
    EXPECT_GT(q4km.kl.meanKld.value, 0.0);
    EXPECT_GT(q4km.bitsPerWeight, 4.5);  // Q4_K with attn_v and ffn_down in Q6_K
    EXPECT_EQ(window.resultsPage()->klPerMethod()->barCount(), 2);
    EXPECT_EQ(window.resultsPage()->table()->rowCount(), 2);

    ExportPanel& exporter = *window.exportPanel();
    ASSERT_TRUE(exporter.selectMethod(QStringLiteral("GGUF Q4_K_M")));
    EXPECT_EQ(exporter.formatName(), QStringLiteral("gguf"));
    EXPECT_TRUE(exporter.formatText().contains(QStringLiteral("llama.cpp, Ollama and LM Studio")))
        << exporter.formatText().toStdString();
    QTemporaryDir scratch;
    exporter.setDestination(scratch.filePath(QStringLiteral("demo-q4")));
    EXPECT_TRUE(exporter.problem().contains(QStringLiteral(".gguf"))) << exporter.problem().toStdString();
    const QString destination = scratch.filePath(QStringLiteral("demo-Q4_K_M.gguf"));
    const QString exportFailure = exportTo(exporter, destination);
    ASSERT_TRUE(exportFailure.isEmpty()) << exportFailure.toStdString();
    EXPECT_EQ(exporter.written(), destination);
    ASSERT_TRUE(waitUntil([&] { return exporter.measuredSize().has_value(); }, 60000));
    EXPECT_EQ(exporter.measuredSize()->tensorFiles, static_cast<std::uint64_t>(QFileInfo(destination).size()));
    QFile file(destination);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    EXPECT_EQ(file.read(4), QByteArray("GGUF"));
}

TEST_F(QuantizeJobTest, CancelMidJobStopsWithinASecond) {
    ASSERT_TRUE(panel().selectMethods({"gptq4", "awq4", "trellis2", "fp8"}));
    panel().setSampling(32, 128, 16);
    panel().setPerLayerKl(true);
    bool cancelled = false;
    QObject::connect(window.quantizeJob(), &QuantizeJob::cancelled, [&] { cancelled = true; });
    int modules = 0;
    QObject::connect(window.quantizeJob(), &QuantizeJob::moduleLogged, [&](const pipeline::ModuleLog&) { ++modules; });
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitUntil([&] { return modules > 0; }, 60000));  // well inside the quantize stage

    QElapsedTimer clock;
    clock.start();
    window.quantizeJob()->cancel();
    ASSERT_TRUE(waitForJob(10000));
    EXPECT_LT(clock.elapsed(), 1000);
    EXPECT_TRUE(cancelled);
    EXPECT_FALSE(result);
    EXPECT_TRUE(failure.isEmpty()) << failure.toStdString();
    EXPECT_FALSE(window.resultsPage()->result());
    EXPECT_LT(window.moduleLog()->rowCount(), 4 * 2 * 7);
}

// The job's last progress report comes after its last cancel check: what is left of it is handing
// over its result. Opening another checkpoint (a copy of the demo: the same shapes, so an export
// would not notice) or cancelling at that moment must keep the result from every view.
class StaleJobTest : public QuantizeJobTest {
protected:
    void SetUp() override {
        QuantizeJobTest::SetUp();
        ASSERT_TRUE(scratch.isValid());
        std::filesystem::copy(kDemo.toStdString(), copy.toStdString(), std::filesystem::copy_options::recursive);
        QObject::connect(window.quantizeJob(), &QuantizeJob::cancelled, [this] { cancelled = true; });
        ASSERT_TRUE(panel().selectMethods({"rtn4"}));
    }

    // Runs the job and calls `atTheEnd` when its last progress report ("done") arrives.
    void runAndAtTheEnd(const std::function<void()>& atTheEnd) {
        bool called = false;
        QObject::connect(window.quantizeJob(), &QuantizeJob::progressed, [&](const qs::Progress& p) {
            if (p.stage != "done" || called) return;
            called = true;
            atTheEnd();
        });
        ASSERT_TRUE(window.startQuantizeJob());
        ASSERT_TRUE(waitForJob());
        ASSERT_TRUE(called);
    }

    void expectNoResultAnywhere() {
        EXPECT_TRUE(cancelled);
        EXPECT_FALSE(result);
        EXPECT_TRUE(failure.isEmpty()) << failure.toStdString();
        EXPECT_FALSE(window.resultsPage()->result());
        EXPECT_FALSE(window.exportPanel()->result());
        EXPECT_TRUE(window.exportPanel()->problem().contains(QStringLiteral("Run a quantization job first")))
            << window.exportPanel()->problem().toStdString();
    }

    QTemporaryDir scratch;
    const QString copy = scratch.filePath(QStringLiteral("finetune"));
    bool cancelled = false;
};

TEST_F(StaleJobTest, OpeningAnotherCheckpointAsTheJobEndsDropsItsResult) {
    runAndAtTheEnd([this] { ASSERT_TRUE(window.openPath(copy)); });
    EXPECT_EQ(window.checkpoint()->root(), std::filesystem::path(copy.toStdString()));
    expectNoResultAnywhere();
    EXPECT_EQ(window.moduleLog()->rowCount(), 0);
}

TEST_F(StaleJobTest, CancellingAsTheJobEndsDropsItsResult) {
    runAndAtTheEnd([this] { window.quantizeJob()->cancel(); });
    expectNoResultAnywhere();
}

TEST_F(StaleJobTest, TheExportPanelRefusesAResultOfAnotherCheckpoint) {
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitForJob());
    ASSERT_TRUE(result);
    EXPECT_EQ(window.exportPanel()->result(), result);  // the open checkpoint's own result goes through

    ExportPanel panel;
    panel.setSource(copy, io::fingerprintOf(io::Checkpoint::open(copy.toStdString())));
    panel.setResult(result);
    const QString out = scratch.filePath(QStringLiteral("out"));
    panel.setDestination(out);
    EXPECT_TRUE(panel.problem().contains(QStringLiteral("was quantized from"))) << panel.problem().toStdString();
    EXPECT_TRUE(
        panel.problem().contains(QString::fromStdString(std::filesystem::canonical(copy.toStdString()).string())));
    panel.startExport();
    EXPECT_FALSE(panel.isExporting());
    EXPECT_FALSE(QFile::exists(out));
}

TEST_F(QuantizeJobTest, TheEventLoopNeverStallsOver50MsWhileAJobRuns) {
    ASSERT_TRUE(panel().selectMethods({"rtn4", "fp8"}));
    panel().setPerLayerKl(true);
    ASSERT_TRUE(waitUntil([this] { return !panel().isEstimating(); }));
    StallMeter meter;
    // Measured while the job runs: until its last progress report, before the results are drawn.
    bool done = false;
    QObject::connect(window.quantizeJob(), &QuantizeJob::progressed, [&](const qs::Progress& p) {
        if (p.stage == "done" && !done) {
            meter.stop();
            done = true;
        }
    });
    ASSERT_TRUE(window.startQuantizeJob());
    ASSERT_TRUE(waitForJob());
    ASSERT_TRUE(result);
    ASSERT_TRUE(done);
    EXPECT_LT(meter.longestGapMs(), 50);
}

// Start-up: the window is built, shown and opens a checkpoint while the device probe (here held
// back until the test lets it go, as a cold GPU driver would) has not answered: the constructor does
// not wait for it, the window works meanwhile, the event loop turns throughout (measured from the
// first paint, which is the window's own work, to the device list filled with the answer).
class StartUpTest : public QtAppTest {};

TEST_F(StartUpTest, TheEventLoopNeverStallsOver50MsWhileTheDeviceIsProbed) {
    std::mutex mutex;
    std::condition_variable released;
    bool release = false;
    std::atomic<bool> probing{false};
    const auto slowProbe = [&] {
        probing = true;
        std::unique_lock lock(mutex);
        released.wait_for(lock, std::chrono::seconds(20), [&] { return release; });
        return pipeline::BackendSelection{pipeline::makeCpuBackend(), "device: the slow probe's answer"};
    };
    QElapsedTimer clock;
    clock.start();
    MainWindow window(MainWindow::Settings::Ignore, slowProbe);
    RecordProperty("construction_ms", static_cast<int>(clock.restart()));
    EXPECT_FALSE(window.deviceProbe()->isDone());  // the constructor did not wait for it
    window.show();
    ASSERT_TRUE(window.openPath(kDemo));
    RecordProperty("show_and_open_ms", static_cast<int>(clock.elapsed()));
    ASSERT_TRUE(waitUntil([&] { return probing.load(); }));
    EXPECT_TRUE(window.isBusy());
    EXPECT_FALSE(window.quantizePanel()->cudaSelectable());
    // The window works meanwhile: the Quantize panel estimates the job, the histogram is drawn.
    ASSERT_TRUE(waitUntil([&] { return window.quantizePanel()->estimate().has_value(); }));
    StallMeter meter;
    window.selectTensor(QStringLiteral("model.layers.1.mlp.down_proj.weight"));
    window.quantizePanel()->setSampling(8, 64, 4);
    ASSERT_TRUE(waitUntil([&] { return !window.quantizePanel()->isEstimating(); }));
    EXPECT_FALSE(window.deviceProbe()->isDone());
    {
        const std::lock_guard lock(mutex);
        release = true;
    }
    released.notify_all();
    ASSERT_TRUE(waitUntil([&] { return window.deviceProbe()->isDone() && !window.isBusy(); }));
    meter.stop();
    EXPECT_EQ(window.deviceProbe()->report()->message, QStringLiteral("device: the slow probe's answer"));
    EXPECT_FALSE(window.quantizePanel()->cudaSelectable());  // the answer was the CPU
    EXPECT_LT(meter.longestGapMs(), 50);
}

}  // namespace
}  // namespace qs::gui::test
