#pragma once
// The main window: the checkpoint tree and summary docks, the inspector tabs in the centre, File
// menu with recent files, drag-and-drop. It owns the open checkpoint and tells the pages about it;
// every error reaches the user through the ErrorReporter.
#include <functional>
#include <memory>
#include <vector>

#include <QMainWindow>

#include "qs/io/checkpoint_fingerprint.h"
#include "qs/pipeline/job_result.h"

#include "jobs/device_probe.h"
#include "jobs/quantize_settings.h"
#include "jobs/run_folder.h"
#include "pages/inspector_page.h"
#include "window/error_reporter.h"

class QAction;
class QDockWidget;
class QMenu;
class QStackedWidget;
class QTabWidget;

namespace qs::gui {

class ChannelsPage;
class CheckpointTreePanel;
class EvaluateJob;
class GgufPage;
class ExportPanel;
class HessianPage;
class ServingScalesPage;
class HistogramPage;
class JobStatusWidget;
class ModuleLogModel;
class OverviewPage;
class JobRunner;
class QuantizeJob;
class QuantizePanel;
class QuantizedLinearPage;
class ImatrixPage;
class ResultsPage;
class SideBySidePage;
class MixedPrecisionPage;
class StartPage;
class SummaryPanel;

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    enum class Settings { Remember, Ignore };  // Ignore: screenshots and tests leave no trace

    // `probe` finds the device a job's Auto would use, on a worker, once the window is built
    // (tests pass a slow one to see that start-up never waits for it).
    explicit MainWindow(Settings settings = Settings::Remember, DeviceProbe::Function probe = DeviceProbe::automatic(),
                        QWidget* parent = nullptr);
    ~MainWindow() override;

    void setErrorReporter(std::shared_ptr<ErrorReporter> reporter);
    // Opens a .safetensors file or a checkpoint folder; on failure reports the core's message and
    // keeps what was open. Returns whether it opened. By value: callers pass strings that opening
    // clears (the Export panel's written folder).
    bool openPath(QString path);
    // What the user's own actions call (Open, Open Recent, a drop, Open for inspection, the demo):
    // first asks whether a running job or the shown results may be discarded.
    bool requestOpen(const QString& path);
    // Help ▸ Open the Demo and the start page's button: the bundled demo checkpoint.
    bool openDemo();
    StartPage* startPage() const { return start_; }
    // Asks the user a yes/no question (a QMessageBox unless replaced: tests answer themselves).
    using Confirmation = std::function<bool(const QString& title, const QString& question)>;
    void setConfirmation(Confirmation confirm) { confirm_ = std::move(confirm); }
    bool showPage(const QString& key);  // "histogram", ..., "results"; or the dock's "quantize", "export"
    bool isBusy() const;                // the visible page is still computing, or a job runs
    void selectTensor(const QString& name);
    // --select: a checkpoint tensor by its name, or a GGUF checkpoint's by the file's name for it
    // ("blk.0.attn_q.weight"); false, selecting nothing, when the open checkpoint has no such tensor.
    bool selectTensorNamed(const QString& name);
    QString currentTensor() const;
    CheckpointPtr checkpoint() const { return checkpoint_; }

    CheckpointTreePanel* treePanel() const { return tree_; }
    SummaryPanel* summaryPanel() const { return summary_; }
    HistogramPage* histogramPage() const { return histogram_; }
    ChannelsPage* channelsPage() const { return channels_; }
    OverviewPage* overviewPage() const { return overview_; }
    ResultsPage* resultsPage() const { return results_; }
    MixedPrecisionPage* mixedPrecisionPage() const { return mixed_; }
    HessianPage* hessianPage() const { return hessian_; }
    ServingScalesPage* servingScalesPage() const { return scales_; }
    QuantizedLinearPage* quantizedLinearPage() const { return quantized_; }
    GgufPage* ggufPage() const { return gguf_; }
    ImatrixPage* imatrixPage() const { return importance_; }
    // File ▸ Open imatrix…: llama.cpp's importance matrix into the Importance tab (shown from now on) and, once
    // read, to the Quantize panel's GGUF methods. Reading runs on the tab's worker; a file that is not an
    // imatrix is reported then.
    void openImatrix(const QString& path);
    // File ▸ Save imatrix of the Last Run…: the importance the last job's GGUF method was calibrated with,
    // as llama-imatrix writes it (pipeline::writeImatrix). False, said why, when there is none or it fails.
    bool saveImatrix(const QString& path);
    bool canSaveImatrix() const;
    SideBySidePage* sideBySidePage() const { return sideBySide_; }
    // File ▸ Compare with Original…: the checkpoint the open one was quantized from (a folder or a
    // .safetensors file), for the Quantized tab's rounding error and for Evaluate. False when refused.
    bool compareWithOriginal(const QString& path);
    const QString& originalPath() const { return originalPath_; }
    // Where Compare with Original…'s dialog opens: beside the open checkpoint.
    QString originalDialogFolder() const;
    // File ▸ Compare with Second Quantization…: another quantization of the open checkpoint's model (a
    // folder, .safetensors or .gguf), compared linear by linear on the Side by side tab. False when
    // refused (nothing open, another model).
    bool compareWithSecond(const QString& path);
    // File ▸ Evaluate against Original: `quantscope-cli eval ORIGINAL OPEN` on a worker, into Results;
    // with a second quantization, it is evaluated next (two rows). False when there is no original yet
    // or a job runs.
    bool startEvaluation();
    EvaluateJob* evaluateJob() const { return evaluation_; }
    QuantizePanel* quantizePanel() const { return quantize_; }
    ExportPanel* exportPanel() const { return export_; }
    QuantizeJob* quantizeJob() const { return job_; }
    ModuleLogModel* moduleLog() const { return moduleLog_; }
    JobStatusWidget* jobStatus() const { return jobStatus_; }
    DeviceProbe* deviceProbe() const { return probe_; }
    InspectorPage* currentPage() const;

    // View ▸ Restore Defaults: the docks as at first start and the Quantize panel's first settings
    // (the next close saves these).
    void restoreDefaults();

    // Starts the Quantize panel's job on the open checkpoint; false when none is open or one runs.
    bool startQuantizeJob();
    // Selects a tensor of `layer` (its `module` when given) in the tree, as plot clicks do.
    void selectLayer(int layer, const QString& module = {});

signals:
    void busyChanged(bool busy);

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void createDocks();
    void createJobDocks();
    void createPages();
    void connectJob();
    void connectEvaluation();
    void updateEvaluateAction();
    void onJobFinished(const std::shared_ptr<const pipeline::JobResult>& result);
    bool showResult(const std::shared_ptr<const pipeline::JobResult>& result);  // false: of another checkpoint
    void createMenus();
    void fillRecentMenu();
    void openFileDialog();
    void openFolderDialog();
    void compareWithOriginalDialog();
    void openImatrixDialog();
    void saveImatrixDialog();
    const pipeline::MethodResult* imatrixResult() const;  // the last result's GGUF method with importance
    void compareWithSecondDialog();
    void showAbout();
    void onTensorSelected(const QString& name);
    void reportError(const QString& title, const QString& message);
    void restoreWindowState();
    // Whether the running job and the results may go; asks only when there is something to lose.
    bool confirmDiscard(const QString& action);
    RunFolder chooseRunFolder(const QuantizeSettings& settings);
    void cleanRunCache();
    void applyDefaultDockSizes();
    void keepTabsInView();
    void addTabListButton();
    void scrollCurrentTabIntoView();

    Settings settings_;
    Confirmation confirm_;
    std::shared_ptr<ErrorReporter> reporter_;
    CheckpointPtr checkpoint_;
    QString path_;
    io::CheckpointFingerprint fingerprint_;  // of checkpoint_: a job's result must carry the same

    CheckpointTreePanel* tree_;
    SummaryPanel* summary_;
    QDockWidget* treeDock_ = nullptr;
    QDockWidget* summaryDock_ = nullptr;
    QDockWidget* quantizeDock_ = nullptr;
    QDockWidget* logDock_ = nullptr;
    QDockWidget* exportDock_ = nullptr;
    QTabWidget* tabs_;
    StartPage* start_;
    QStackedWidget* centre_ = nullptr;
    HistogramPage* histogram_;
    ChannelsPage* channels_;
    OverviewPage* overview_;
    HessianPage* hessian_;
    ServingScalesPage* scales_;
    QuantizedLinearPage* quantized_;
    GgufPage* gguf_;
    SideBySidePage* sideBySide_;
    ResultsPage* results_;
    MixedPrecisionPage* mixed_;
    QuantizePanel* quantize_;
    ExportPanel* export_;
    QuantizeJob* job_;
    EvaluateJob* evaluation_;
    QString originalPath_;  // accepted by compareWithOriginal for the open checkpoint
    QAction* evaluateAction_ = nullptr;
    ImatrixPage* importance_;
    QAction* saveImatrixAction_ = nullptr;
    QuantizeSettings lastRunSettings_;  // of the job whose result Results shows (its calibration text)
    ModuleLogModel* moduleLog_;
    JobStatusWidget* jobStatus_;
    DeviceProbe* probe_;
    JobRunner* cacheCleaner_;  // the run cache's clean-up at start (RunCache::cleanUp)
    std::vector<InspectorPage*> pages_;
    QMenu* recentMenu_ = nullptr;
    QByteArray defaultLayout_;  // saveState() of the docks as built
    bool shownBefore_ = false;
    bool stateRestored_ = false;  // a saved dock layout was restored: default sizes would undo it
};

}  // namespace qs::gui
