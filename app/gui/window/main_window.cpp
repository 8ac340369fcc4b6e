#include "window/main_window.h"

#include <algorithm>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHeaderView>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QSignalBlocker>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolButton>

#include "qs/formats/detect.h"
#include "qs/io/gguf_tensor_names.h"
#include "qs/message_text.h"
#include "qs/pipeline/bundled_resources.h"
#include "qs/pipeline/gguf_imatrix.h"
#include "qs/pipeline/quantized_source.h"
#include "qs/pipeline/run_text.h"

#include "experts/expert_overview_layout.h"
#include "jobs/evaluate_job.h"
#include "jobs/job_runner.h"
#include "jobs/quantize_job.h"
#include "jobs/run_cache.h"
#include "models/checkpoint_tree_model.h"
#include "models/module_log_model.h"
#include "pages/channels_page.h"
#include "pages/column_chooser.h"
#include "pages/gguf_page.h"
#include "pages/hessian_page.h"
#include "pages/histogram_page.h"
#include "pages/imatrix_page.h"
#include "pages/mixed_precision_page.h"
#include "pages/overview_page.h"
#include "pages/quantized_linear_page.h"
#include "pages/results_page.h"
#include "pages/serving_scales_page.h"
#include "pages/side_by_side_page.h"
#include "panels/checkpoint_tree_panel.h"
#include "panels/export_panel.h"
#include "panels/forward_pass_support.h"
#include "panels/job_status_widget.h"
#include "panels/quantize_panel.h"
#include "panels/summary_panel.h"
#include "text/number_format.h"
#include "window/about_dialog.h"
#include "window/checkpoint_file_dialog.h"
#include "window/message_box_error_reporter.h"
#include "window/recent_files.h"
#include "window/start_page.h"

namespace qs::gui {
namespace {

constexpr int kStateVersion = 3;  // bump when the docks change, so old saved layouts are ignored

// A dock's content scrolls instead of setting the window's minimum height: the window must fit a
// 1366x768 laptop screen.
QScrollArea* scrolling(QWidget* content, QWidget* parent) {
    auto* scroll = new QScrollArea(parent);
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    return scroll;
}

}  // namespace

MainWindow::MainWindow(Settings settings, DeviceProbe::Function probe, QWidget* parent)
    : QMainWindow(parent),
      settings_(settings),
      reporter_(std::make_shared<MessageBoxErrorReporter>(this)),
      tree_(new CheckpointTreePanel(this)),
      summary_(new SummaryPanel(this)),
      tabs_(new QTabWidget(this)),
      start_(new StartPage(this)),
      histogram_(new HistogramPage(this)),
      channels_(new ChannelsPage(this)),
      overview_(new OverviewPage(this)),
      hessian_(new HessianPage(this)),
      scales_(new ServingScalesPage(this)),
      quantized_(new QuantizedLinearPage(this)),
      gguf_(new GgufPage(this)),
      sideBySide_(new SideBySidePage(this)),
      results_(new ResultsPage(this)),
      mixed_(new MixedPrecisionPage(this)),
      quantize_(new QuantizePanel(this)),
      export_(new ExportPanel(this)),
      job_(new QuantizeJob(this)),
      evaluation_(new EvaluateJob(this)),
      importance_(new ImatrixPage(this)),
      moduleLog_(new ModuleLogModel(this)),
      jobStatus_(new JobStatusWidget(this)),
      probe_(new DeviceProbe(std::move(probe), this)),
      cacheCleaner_(new JobRunner(this)) {
    confirm_ = [this](const QString& title, const QString& question) {
        return QMessageBox::question(this, title, question, QMessageBox::Yes | QMessageBox::No, QMessageBox::No) ==
               QMessageBox::Yes;
    };
    setWindowTitle(tr("QuantScope"));
    setAcceptDrops(true);
    // A laptop's 1366 x 768 is smaller than the preferred size: never open larger than the screen.
    if (const QScreen* screen = QGuiApplication::primaryScreen())
        resize(QSize(1400, 900).boundedTo(screen->availableGeometry().size()));
    else
        resize(1400, 900);
    createPages();
    createDocks();
    createJobDocks();
    connectJob();
    connectEvaluation();
    createMenus();
    statusBar()->showMessage(
        tr("Open a .safetensors or .gguf file or a checkpoint folder (File ▸ Open, or drop it here)."));
    defaultLayout_ = saveState(kStateVersion);  // before a saved layout replaces it
    if (settings_ == Settings::Remember) restoreWindowState();
    connect(probe_, &DeviceProbe::finished, quantize_, &QuantizePanel::showDevices);
    connect(probe_, &DeviceProbe::finished, this, [this] { emit busyChanged(isBusy()); });
    probe_->start();
    cleanRunCache();
}

MainWindow::~MainWindow() = default;

void MainWindow::createPages() {
    pages_ = {histogram_, quantized_, gguf_,    sideBySide_, channels_,  overview_,
              hessian_,   scales_,    results_, mixed_,      importance_};
    for (InspectorPage* page : pages_) {
        tabs_->setTabToolTip(tabs_->addTab(page, page->title()), page->toolTip());
        connect(page, &InspectorPage::errorOccurred, this, &MainWindow::reportError);
        connect(page, &InspectorPage::busyChanged, this, [this] { emit busyChanged(isBusy()); });
    }
    // The Importance tab once an imatrix is open (File ▸ Open imatrix…): the tab bar has room for few.
    tabs_->setTabVisible(tabs_->indexOf(importance_), false);
    connect(importance_, &ImatrixPage::imatrixLoaded, this, [this](const QString& path) {
        quantize_->setImatrix(path);
        statusBar()->showMessage(tr("Opened %1: the GGUF methods of the Quantize panel weigh by it.").arg(path), 10000);
    });
    connect(importance_, &ImatrixPage::linearActivated, this, &MainWindow::selectLayer);
    connect(importance_, &InspectorPage::errorOccurred, this, [this] {  // a file that is not an imatrix
        if (importance_->imatrixPath().isEmpty()) tabs_->setTabVisible(tabs_->indexOf(importance_), false);
    });
    tabs_->setTabVisible(tabs_->indexOf(sideBySide_), false);  // until Compare with Second Quantization…
    tabs_->setDocumentMode(true);
    addTabListButton();
    keepTabsInView();
    // The tabs once a checkpoint is open; before, the start page (how to open one, and the demo).
    centre_ = new QStackedWidget(this);
    centre_->addWidget(start_);
    centre_->addWidget(tabs_);
    setCentralWidget(centre_);
    connect(start_, &StartPage::openFileRequested, this, &MainWindow::openFileDialog);
    connect(start_, &StartPage::openFolderRequested, this, &MainWindow::openFolderDialog);
    connect(start_, &StartPage::openDemoRequested, this, &MainWindow::openDemo);
    connect(overview_, &OverviewPage::tensorActivated, this, &MainWindow::selectTensor);
    connect(gguf_, &GgufPage::tensorActivated, this, &MainWindow::selectTensor);
    connect(results_, &ResultsPage::layerActivated, this, [this](int layer) { selectLayer(layer); });
    connect(results_, &ResultsPage::linearActivated, this, &MainWindow::selectLayer);
    export_->setSettingsProvider([this](const pipeline::MethodResult& m) {
        return m.mixed ? mixed_->exportSettings(m.label()) : nlohmann::json::object();
    });
    // The allocation stays in view on its plot; Results and Export gain it beside.
    connect(mixed_, &MixedPrecisionPage::allocationsQuantized, this,
            [this](const std::shared_ptr<const pipeline::JobResult>& result) {
                if (showResult(result))
                    statusBar()->showMessage(tr("%1 is in Results, and in Export to write.")
                                                 .arg(QString::fromStdString(result->methods.back().label())),
                                             10000);
            });
}

void MainWindow::createDocks() {
    summaryDock_ = new QDockWidget(tr("Summary"), this);
    summaryDock_->setObjectName(QStringLiteral("summaryDock"));
    summaryDock_->setWidget(scrolling(summary_, this));
    treeDock_ = new QDockWidget(tr("Checkpoint"), this);
    treeDock_->setObjectName(QStringLiteral("treeDock"));
    treeDock_->setWidget(tree_);
    addDockWidget(Qt::LeftDockWidgetArea, summaryDock_);
    addDockWidget(Qt::LeftDockWidgetArea, treeDock_);
    connect(tree_, &CheckpointTreePanel::tensorSelected, this, &MainWindow::onTensorSelected);
}

void MainWindow::createJobDocks() {
    quantizeDock_ = new QDockWidget(tr("Quantize"), this);
    quantizeDock_->setObjectName(QStringLiteral("quantizeDock"));
    quantizeDock_->setWidget(quantize_);
    addDockWidget(Qt::RightDockWidgetArea, quantizeDock_);
    auto* logView = new QTableView(this);
    logView->setObjectName(QStringLiteral("moduleLogView"));
    logView->setModel(moduleLog_);
    logView->verticalHeader()->hide();
    logView->verticalHeader()->setDefaultSectionSize(logView->fontMetrics().height() + 6);
    logView->setWordWrap(false);
    // Columns sized once, from the first rows: resizing to contents on every row is quadratic.
    connect(moduleLog_, &QAbstractItemModel::rowsInserted, logView, [logView](const QModelIndex&, int first) {
        if (first == 0) logView->resizeColumnsToContents();
    });
    // ... and once more when the job ends: later rows have longer module names than the first.
    connect(job_, &QuantizeJob::runningChanged, logView, [logView](bool running) {
        if (!running) logView->resizeColumnsToContents();
    });
    logDock_ = new QDockWidget(tr("Module log"), this);
    logDock_->setObjectName(QStringLiteral("moduleLogDock"));
    logDock_->setWidget(logView);
    addDockWidget(Qt::BottomDockWidgetArea, logDock_);
    connect(moduleLog_, &QAbstractItemModel::rowsInserted, logView, &QTableView::scrollToBottom);
    exportDock_ = new QDockWidget(tr("Export"), this);
    exportDock_->setObjectName(QStringLiteral("exportDock"));
    exportDock_->setWidget(scrolling(export_, this));
    addDockWidget(Qt::RightDockWidgetArea, exportDock_);
    tabifyDockWidget(quantizeDock_, exportDock_);
    quantizeDock_->raise();
    connect(export_, &ExportPanel::openRequested, this, &MainWindow::requestOpen);
    connect(export_, &ExportPanel::failed, this, [this](const QString& m) { reportError(tr("Export failed"), m); });
    connect(export_, &ExportPanel::exported, this,
            [this](const QString& f) { statusBar()->showMessage(tr("Exported to %1.").arg(f), 10000); });
    statusBar()->addPermanentWidget(jobStatus_);
}

void MainWindow::connectJob() {
    connect(quantize_, &QuantizePanel::startRequested, this, &MainWindow::startQuantizeJob);
    connect(quantize_, &QuantizePanel::deviceChosen, hessian_, &HessianPage::setDevice);
    connect(quantize_, &QuantizePanel::cancelRequested, job_, &QuantizeJob::cancel);
    connect(jobStatus_, &JobStatusWidget::cancelRequested, job_, &QuantizeJob::cancel);
    connect(job_, &QuantizeJob::runningChanged, this, [this](bool running) {
        quantize_->setRunning(running);
        jobStatus_->setRunning(running, quantize_->estimate() ? quantize_->estimate()->seconds : 0.0);
        emit busyChanged(isBusy());
    });
    connect(job_, &QuantizeJob::progressed, this,
            [this](const qs::Progress& p) { jobStatus_->showProgress(p, job_->elapsedSeconds()); });
    connect(job_, &QuantizeJob::moduleLogged, moduleLog_, &ModuleLogModel::append);
    connect(job_, &QuantizeJob::finished, this, &MainWindow::onJobFinished);
    connect(job_, &QuantizeJob::failed, this, [this](const QString& m) { reportError(tr("Quantization failed"), m); });
    connect(job_, &QuantizeJob::cancelled, this,
            [this] { statusBar()->showMessage(tr("Quantization cancelled."), 10000); });
}

bool MainWindow::startQuantizeJob() {
    if (!checkpoint_ || job_->isRunning()) return false;
    if (evaluation_->isRunning()) {
        reportError(tr("Cannot quantize"), tr("An evaluation is running: wait for it, or cancel it."));
        return false;
    }
    if (!quantize_->refusal().isEmpty()) {
        reportError(tr("Cannot quantize"), quantize_->refusal());
        return false;
    }
    const QuantizeSettings settings = quantize_->settings();
    if (settings_ == Settings::Remember) {  // now, not only at a clean quit: a killed session keeps them too
        QSettings remembered;
        quantize_->saveSettings(remembered);
    }
    RunFolder folder;
    try {
        folder = chooseRunFolder(settings);
    } catch (const std::exception& e) {  // the cache folder cannot be written
        reportError(tr("Cannot quantize"), QString::fromStdString(e.what()));
        return false;
    }
    moduleLog_->clear();
    lastRunSettings_ = settings;
    return job_->start(settings, path_.toStdString(), std::move(folder));
}

// The evaluation shares the status bar's progress and Cancel with the Quantize panel's job (one of
// the two runs at a time).
void MainWindow::connectEvaluation() {
    connect(jobStatus_, &JobStatusWidget::cancelRequested, evaluation_, &EvaluateJob::cancel);
    connect(evaluation_, &EvaluateJob::runningChanged, this, [this](bool running) {
        jobStatus_->setRunning(running);
        updateEvaluateAction();
        emit busyChanged(isBusy());
    });
    connect(evaluation_, &EvaluateJob::progressed, this,
            [this](const qs::Progress& p) { jobStatus_->showProgress(p, evaluation_->elapsedSeconds()); });
    connect(evaluation_, &EvaluateJob::finished, this, [this](const EvaluationPtr& evaluation) {
        if (evaluation->openCheckpoint != fingerprint_) return;  // of a checkpoint no longer open
        results_->addEvaluation(evaluation);
        showPage(results_->key());
        statusBar()->showMessage(tr("Evaluation finished in %1: %2 is in Results.")
                                     .arg(durationText(evaluation->result.seconds), evaluation->label),
                                 10000);
    });
    connect(evaluation_, &EvaluateJob::failed, this,
            [this](const QString& m) { reportError(tr("Evaluation failed"), m); });
    connect(evaluation_, &EvaluateJob::cancelled, this,
            [this] { statusBar()->showMessage(tr("Evaluation cancelled."), 10000); });
}

bool MainWindow::startEvaluation() {
    if (!checkpoint_ || originalPath_.isEmpty() || evaluation_->isRunning()) return false;
    if (job_->isRunning()) {
        reportError(tr("Cannot evaluate"), tr("A quantization is running: wait for it, or cancel it."));
        return false;
    }
    const QString second = sideBySide_->secondPath();
    if (!evaluation_->start(originalPath_, path_, second)) return false;
    // Short: the status bar's progress and Cancel take its right-hand side.
    const QString evaluated =
        second.isEmpty()
            ? QFileInfo(path_).fileName()
            : tr("%1 and %2").arg(QFileInfo(path_).fileName(), QFileInfo(QDir::cleanPath(second)).fileName());
    statusBar()->showMessage(tr("Evaluating %1 against %2…").arg(evaluated, QFileInfo(originalPath_).fileName()));
    return true;
}

void MainWindow::updateEvaluateAction() {
    if (!evaluateAction_) return;
    evaluateAction_->setEnabled(checkpoint_ && !originalPath_.isEmpty() && !evaluation_->isRunning());
}

// The folder the run keeps its state and then its result's codes in: a new one of the run cache, so
// that a result still shown never shares its folder with the next run; or, when an earlier run of the
// same settings was interrupted, its folder, if the user chooses to resume it (else it goes now).
RunFolder MainWindow::chooseRunFolder(const QuantizeSettings& settings) {
    const RunCache cache = RunCache::inUserCache();
    const std::string key = runKey(settings, fingerprint_);
    if (std::optional<RunCache::Interrupted> interrupted = cache.takeInterrupted(key)) {
        if (confirm_(tr("Resume the interrupted run?"),
                     tr("A run with these settings on this checkpoint stopped after finishing %n layer(s). "
                        "Resume it from there? (No starts over.)",
                        nullptr, interrupted->finishedLayers)))
            return {interrupted->lease, true};
        interrupted->lease->removeFolder();
    }
    return {cache.startNew(key), false};
}

// Stale folders of earlier sessions go, on a worker: removing a large result takes a moment.
void MainWindow::cleanRunCache() {
    cacheCleaner_->start([cache = RunCache::inUserCache()](const qs::CancelToken&) { return cache.cleanUp(); },
                         [](const RunCache::Cleaned&) {}, [](const QString&) {});
}

void MainWindow::onJobFinished(const std::shared_ptr<const pipeline::JobResult>& result) {
    if (!showResult(result)) return;
    showPage(results_->key());
    statusBar()->showMessage(tr("Quantization finished in %1.").arg(durationText(result->seconds)), 10000);
}

// A job's result, or the Bit budget tab's quantized allocations, into Results and Export.
bool MainWindow::showResult(const std::shared_ptr<const pipeline::JobResult>& result) {
    // QuantizeJob drops what a cancelled job delivers; this catches a result of any other origin.
    if (result->source != fingerprint_) {
        statusBar()->showMessage(
            tr("A finished job's results were dropped: they are of %1, not of the open checkpoint.")
                .arg(QString::fromStdString(result->source.describe())),
            10000);
        return false;
    }
    results_->setResult(result);
    export_->setResult(result);
    if (saveImatrixAction_) saveImatrixAction_->setEnabled(canSaveImatrix());
    return true;
}

void MainWindow::openImatrix(const QString& path) {
    tabs_->setTabVisible(tabs_->indexOf(importance_), true);
    keepTabsInView();
    importance_->openImatrix(path);
}

void MainWindow::openImatrixDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open llama.cpp's imatrix"), originalDialogFolder(),
                                                      tr("imatrix (*.gguf *.dat *.imatrix);;All files (*)"));
    if (path.isEmpty()) return;
    openImatrix(path);
    showPage(importance_->key());
}

const pipeline::MethodResult* MainWindow::imatrixResult() const {
    const auto& result = results_->result();
    if (!result) return nullptr;
    for (const pipeline::MethodResult& m : result->methods) {
        if (!m.error.empty() || !m.method.ggufFileMix()) continue;
        for (const auto& layer : pipeline::linearHeaders(m))
            for (const auto& [module, q] : layer)
                if (q->inputCount > 0) return &m;
    }
    return nullptr;
}

bool MainWindow::canSaveImatrix() const { return checkpoint_ && imatrixResult() != nullptr; }

void MainWindow::saveImatrixDialog() {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Save the last run's imatrix"), QDir(originalDialogFolder()).filePath(QStringLiteral("imatrix.gguf")),
        tr("imatrix (*.gguf)"));
    if (!path.isEmpty()) saveImatrix(path);
}

bool MainWindow::saveImatrix(const QString& path) {
    const pipeline::MethodResult* m = imatrixResult();
    if (!checkpoint_ || !m) {
        reportError(tr("No imatrix to save"),
                    tr("Run a GGUF method (q4_k_m, q6_k, ...) with calibration text first: its imatrix is the "
                       "calibration's Σx² per input column."));
        return false;
    }
    try {
        const pipeline::ImatrixInfo info{
            {pipeline::resolveRunText(pipeline::TextRole::Calibration, lastRunSettings_.calibrationFile.toStdString(),
                                      *checkpoint_)
                 .filename()
                 .string()},
            static_cast<std::uint32_t>(lastRunSettings_.samples),
            static_cast<std::uint32_t>(lastRunSettings_.sequenceLength)};
        pipeline::writeImatrix(*m, model::ModelConfig::fromCheckpoint(*checkpoint_), path.toStdString(), info,
                               true);  // the dialog asked before replacing
    } catch (const std::exception& e) {
        reportError(tr("Cannot save the imatrix"), QString::fromUtf8(e.what()));
        return false;
    }
    statusBar()->showMessage(tr("Saved the imatrix of %1 to %2.").arg(QString::fromStdString(m->label()), path), 10000);
    return true;
}

void MainWindow::selectLayer(int layer, const QString& module) {
    if (!checkpoint_) return;
    const std::string wanted = module.toStdString();
    for (const io::CheckpointTensor& t : checkpoint_->tensors()) {
        if (t.naming.layer != layer || t.naming.role != io::TensorRole::Linear) continue;
        if (!wanted.empty() && t.naming.module != wanted) continue;
        selectTensor(QString::fromStdString(t.info->name));
        return;
    }
    // gpt-oss's experts have no tensors of their own ("mlp.experts.3.gate_up_proj" in the log): the stacked one.
    if (const auto stacked = expertWeightTensor(*checkpoint_, layer, wanted))
        selectTensor(QString::fromStdString(*stacked));
}

void MainWindow::createMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open File…"), QKeySequence::Open, this, &MainWindow::openFileDialog);
    file->addAction(tr("Open &Folder…"), QKeySequence(tr("Ctrl+Shift+O")), this, &MainWindow::openFolderDialog);
    file->addAction(tr("&Compare with Original…"), this, &MainWindow::compareWithOriginalDialog)
        ->setToolTip(tr("Name the checkpoint this one was quantized from: the Quantized tab then shows each "
                        "linear's rounding error, and Evaluate measures its KL"));
    file->addAction(tr("Compare with &Second Quantization…"), this, &MainWindow::compareWithSecondDialog)
        ->setToolTip(tr("Name another quantization of this model (ours against llama.cpp's, two downloads): the "
                        "Side by side tab compares them linear by linear, and Evaluate measures both"));
    evaluateAction_ = file->addAction(tr("&Evaluate against Original"), this, &MainWindow::startEvaluation);
    evaluateAction_->setToolTip(
        tr("The KL of the open checkpoint from its original on held-out text, as "
           "quantscope-cli eval measures it, into Results (after Compare with Original…)"));
    updateEvaluateAction();
    file->addSeparator();
    file->addAction(tr("Open &imatrix…"), this, &MainWindow::openImatrixDialog)
        ->setToolTip(tr("llama.cpp's importance matrix (llama-imatrix's GGUF or .dat file): shown per linear and "
                        "column in the Importance tab, and weighing the GGUF methods of the Quantize panel"));
    saveImatrixAction_ = file->addAction(tr("&Save imatrix of the Last Run…"), this, &MainWindow::saveImatrixDialog);
    saveImatrixAction_->setToolTip(
        tr("The calibration's Σx² per input column of the last run's GGUF method, as llama-imatrix writes it, for "
           "llama-quantize --imatrix"));
    saveImatrixAction_->setEnabled(false);
    file->addSeparator();
    recentMenu_ = file->addMenu(tr("Open &Recent"));
    connect(recentMenu_, &QMenu::aboutToShow, this, &MainWindow::fillRecentMenu);
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addAction(summaryDock_->toggleViewAction());
    view->addAction(treeDock_->toggleViewAction());
    view->addAction(quantizeDock_->toggleViewAction());
    view->addAction(logDock_->toggleViewAction());
    view->addAction(exportDock_->toggleViewAction());
    view->addSeparator();
    view->addAction(tr("Restore &Defaults"), this, &MainWindow::restoreDefaults)
        ->setToolTip(tr("The docks where they were at first, and the Quantize panel's first settings"));

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("Open the &Demo"), this, &MainWindow::openDemo);
    help->addAction(tr("&About QuantScope"), this, &MainWindow::showAbout);
}

void MainWindow::fillRecentMenu() {
    recentMenu_->clear();
    const QStringList paths = RecentFiles().paths();
    for (const QString& path : paths) {
        recentMenu_->addAction(path, this, [this, path] { requestOpen(path); });
    }
    if (paths.isEmpty()) recentMenu_->addAction(tr("(none)"))->setEnabled(false);
    recentMenu_->addSeparator();
    recentMenu_->addAction(tr("Clear list"), this, [] { RecentFiles().clear(); });
}

void MainWindow::openFileDialog() {
    CheckpointFileDialog dialog(this, QFileInfo(path_).absolutePath());
    if (dialog.exec() == QDialog::Accepted && !dialog.selectedFiles().isEmpty())
        requestOpen(dialog.selectedFiles().front());
}

void MainWindow::openFolderDialog() {
    const QString path =
        QFileDialog::getExistingDirectory(this, tr("Open checkpoint folder"), QFileInfo(path_).absolutePath());
    if (!path.isEmpty()) requestOpen(path);
}

// Beside the open checkpoint, where its original usually is (the folder holding a .gguf file or a
// checkpoint folder), rather than inside the last original named (the demo's, in the app's resources).
QString MainWindow::originalDialogFolder() const {
    return QFileInfo(QDir::cleanPath(path_)).absolutePath();  // "model/" is the folder model, not inside it
}

void MainWindow::compareWithOriginalDialog() {
    CheckpointFileDialog dialog(this, originalDialogFolder(),
                                tr("Original checkpoint (a file, or a folder: select it and press Open)"));
    if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty()) return;
    if (compareWithOriginal(dialog.selectedFiles().front())) showPage(quantized_->key());
}

void MainWindow::compareWithSecondDialog() {
    CheckpointFileDialog dialog(this, originalDialogFolder(),
                                tr("Second quantization (a file, or a folder: select it and press Open)"));
    if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty()) return;
    compareWithSecond(dialog.selectedFiles().front());
}

bool MainWindow::compareWithSecond(const QString& path) {
    if (!checkpoint_) {
        reportError(tr("Nothing to compare"),
                    tr("Open a quantized checkpoint first, then name a second quantization of its model."));
        return false;
    }
    if (!sideBySide_->setSecond(path)) return false;  // the page reported why
    tabs_->setTabVisible(tabs_->indexOf(sideBySide_), true);
    keepTabsInView();
    showPage(sideBySide_->key());
    statusBar()->showMessage(tr("Comparing with %1: File ▸ Evaluate against Original then measures both.").arg(path),
                             10000);
    return true;
}

bool MainWindow::compareWithOriginal(const QString& path) {
    if (!checkpoint_) {
        reportError(tr("Nothing to compare"),
                    tr("Open a quantized checkpoint first, then name the checkpoint it was quantized from."));
        return false;
    }
    if (!quantized_->setOriginal(path)) return false;  // the page reported why
    try {
        sideBySide_->setOriginal(std::make_shared<const io::Checkpoint>(io::Checkpoint::open(path.toStdString())));
    } catch (const std::exception& e) {  // the Quantized tab opened it a moment ago: hardly ever
        reportError(tr("Cannot open checkpoint"), QString::fromStdString(e.what()));
        return false;
    }
    originalPath_ = path;
    updateEvaluateAction();
    statusBar()->showMessage(
        tr("Compared with %1: File ▸ Evaluate against Original measures the KL of this checkpoint from it.").arg(path),
        10000);
    return true;
}

bool MainWindow::openDemo() {
    const auto demo = pipeline::bundledResource("demo");
    if (!demo) {
        reportError(tr("Cannot open the demo"),
                    tr("The bundled demo checkpoint (resources/demo) is not installed with this build."));
        return false;
    }
    return requestOpen(QString::fromStdString(demo->string()));
}

bool MainWindow::requestOpen(const QString& path) {
    return confirmDiscard(tr("Opening %1").arg(QFileInfo(path).fileName())) && openPath(path);
}

bool MainWindow::confirmDiscard(const QString& action) {
    QString loses;
    if (evaluation_->isRunning())
        loses = tr("%1 cancels the running evaluation.").arg(action);
    else if (job_->isRunning())
        loses = tr("%1 cancels the running quantization (its finished layers are kept: Start with the same settings "
                   "offers to resume them).")
                    .arg(action);
    else if (results_->result())
        loses = export_->written().isEmpty()
                    ? tr("%1 clears the Results and the Module log, which were not exported.").arg(action)
                    : tr("%1 clears the Results and the Module log (one result was exported to %2).")
                          .arg(action, export_->written());
    if (loses.isEmpty()) return true;
    return confirm_(tr("Discard the results?"), loses + QLatin1Char(' ') + tr("Continue?"));
}

bool MainWindow::openPath(QString path) {
    CheckpointPtr opened;
    formats::FormatInfo format;
    try {
        opened = std::make_shared<const io::Checkpoint>(io::Checkpoint::open(path.toStdString()));
        format = formats::detect(*opened);
    } catch (const std::exception& e) {  // qs::Error, and filesystem errors of unreadable paths
        reportError(tr("Cannot open checkpoint"), QString::fromStdString(e.what()));
        return false;
    }
    job_->cancel();  // a running job's results belong to the previous checkpoint: they are dropped
    evaluation_->cancel();
    originalPath_.clear();  // of the previous checkpoint
    updateEvaluateAction();
    checkpoint_ = std::move(opened);
    fingerprint_ = io::fingerprintOf(*checkpoint_);
    path_ = path;
    setWindowTitle(tr("%1 — QuantScope").arg(QFileInfo(path).fileName()));
    centre_->setCurrentWidget(tabs_);
    summary_->setSummary(path, *checkpoint_, format);
    for (InspectorPage* page : pages_) page->setCheckpoint(checkpoint_);
    // Only a quantized checkpoint has the Quantized tab: the six others fill a laptop's tab bar.
    // A quantized checkpoint's linears get their own tab; the bit budget is for one that can be quantized.
    tabs_->setTabVisible(tabs_->indexOf(quantized_), quantized_->hasQuantizedLinears());
    tabs_->setTabVisible(tabs_->indexOf(mixed_), !quantized_->hasQuantizedLinears());
    tabs_->setTabVisible(tabs_->indexOf(gguf_), gguf_->hasGguf());  // the file's own view, only for a GGUF
    tabs_->setTabVisible(tabs_->indexOf(sideBySide_), false);       // until Compare with Second Quantization…
    keepTabsInView();
    tree_->setCheckpoint(checkpoint_);
    // Start would fail on linears that do not decode, or without a forward pass: it is disabled, saying why.
    // A quantized checkpoint is quantized from its decoded weights, which the panel says.
    const std::optional<pipeline::QuantizedSource> quantized = pipeline::quantizedSource(format);
    quantize_->setCheckpoint(path, QString::fromStdString(pipeline::undecodableSourceRefusal(*checkpoint_, format)),
                             forwardPassRefusal(*checkpoint_), !expertLinears(*checkpoint_).empty(),
                             quantized ? QString::fromStdString(quantized->referenceNote()) : QString());
    export_->setSource(path, fingerprint_);
    saveImatrixAction_->setEnabled(canSaveImatrix());
    moduleLog_->clear();
    if (settings_ == Settings::Remember) RecentFiles().add(path);
    statusBar()->showMessage(tr("Opened %1: %2 tensors, %3 on disk")
                                 .arg(path)
                                 .arg(checkpoint_->tensors().size())
                                 .arg(humanBytes(checkpoint_->summary().sizeOnDisk)));
    selectTensor(tree_->model()->defaultTensor());  // a real histogram from the first moment
    return true;
}

void MainWindow::selectTensor(const QString& name) { tree_->selectTensor(name); }

QString MainWindow::currentTensor() const { return tree_->currentTensor(); }

bool MainWindow::selectTensorNamed(const QString& name) {
    if (!checkpoint_) return false;
    std::string tensor = name.toStdString();
    if (!checkpoint_->find(tensor)) {
        const io::GgufFile* file = checkpoint_->gguf();
        const auto hf = file ? io::hfNameInGguf(io::ggufTensorNames(*file), tensor) : std::nullopt;
        if (!hf || !checkpoint_->find(*hf)) return false;
        tensor = *hf;
    }
    selectTensor(QString::fromStdString(tensor));
    return currentTensor() == QString::fromStdString(tensor);
}

void MainWindow::onTensorSelected(const QString& name) {
    for (InspectorPage* page : pages_) page->setTensor(name);
}

InspectorPage* MainWindow::currentPage() const { return qobject_cast<InspectorPage*>(tabs_->currentWidget()); }

bool MainWindow::showPage(const QString& key) {
    // The Quantize and Export panels are the tabs of the right-hand dock.
    if (key == QLatin1String("quantize") || key == QLatin1String("export")) {
        (key == QLatin1String("export") ? exportDock_ : quantizeDock_)->raise();
        return true;
    }
    for (InspectorPage* page : pages_) {
        if (page->key().compare(key, Qt::CaseInsensitive) == 0) {  // "--tab Hessian" as the tab reads
            tabs_->setCurrentWidget(page);
            return true;
        }
    }
    return false;
}

bool MainWindow::isBusy() const {
    const InspectorPage* page = currentPage();
    return job_->isRunning() || evaluation_->isRunning() || quantize_->isEstimating() || !probe_->isDone() ||
           (page && page->isBusy());
}

void MainWindow::setErrorReporter(std::shared_ptr<ErrorReporter> reporter) { reporter_ = std::move(reporter); }

void MainWindow::reportError(const QString& title, const QString& message) {
    // Every failure the window shows comes through here: one line of valid text, whatever it quotes.
    const QString text = QString::fromStdString(sanitizeMessage(message.toStdString()));
    statusBar()->showMessage(text, 10000);
    if (reporter_) reporter_->report(title, text);
}

void MainWindow::showAbout() {
    AboutDialog about(probe_->report(), this);
    connect(probe_, &DeviceProbe::finished, &about, &AboutDialog::showDevice);  // opened while still probing
    about.exec();
}

// The centre is never narrower than its tab bar, so that at 1366 pixels no tab hides behind a scroll
// arrow (Results did, beside the default docks); the docks give way. Up to the six tabs of a dense
// checkpoint (550 pixels): the 565 the default docks leave at 1366 cannot take a quantized one's
// seventh, which scrolls (its Results are empty: a quantized checkpoint is not quantized again).
// At 1366 pixels the tab bar scrolls once a quantized checkpoint's or an imatrix's tabs join: a button at
// its end lists every tab, so that none hides behind the scroll arrows (as browsers list theirs).
void MainWindow::addTabListButton() {
    auto* button = new QToolButton(tabs_);
    button->setObjectName(QStringLiteral("tabList"));
    button->setText(QStringLiteral("☰"));
    button->setToolTip(tr("Every tab"));
    button->setAutoRaise(true);
    button->setPopupMode(QToolButton::InstantPopup);
    auto* menu = new QMenu(button);
    connect(menu, &QMenu::aboutToShow, this, [this, menu] {
        menu->clear();
        for (int i = 0; i < tabs_->count(); ++i) {
            if (!tabs_->isTabVisible(i)) continue;
            QAction* action = menu->addAction(tabs_->tabText(i), this, [this, i] { tabs_->setCurrentIndex(i); });
            action->setCheckable(true);
            action->setChecked(i == tabs_->currentIndex());
        }
    });
    button->setMenu(menu);
    tabs_->setCornerWidget(button, Qt::TopRightCorner);
}

void MainWindow::keepTabsInView() {
    constexpr int kWidestTabBar = 560;
    // On the bar, not the tab widget: its minimum stays the larger of the bar's and the pages'.
    tabs_->tabBar()->setMinimumWidth(std::min(tabs_->tabBar()->sizeHint().width(), kWidestTabBar));
    // Once laid out: the tabs shown for this checkpoint may have pushed the current one out of view.
    QTimer::singleShot(0, this, &MainWindow::scrollCurrentTabIntoView);
}

// QTabBar scrolls a tab into view only when it becomes current: it is made current again (from a neighbour,
// with the bar's signals blocked, so that the pages never see the change).
void MainWindow::scrollCurrentTabIntoView() {
    QTabBar* bar = tabs_->tabBar();
    const int current = bar->currentIndex();
    if (current < 0 || bar->rect().contains(bar->tabRect(current))) return;
    int other = -1;
    for (int i = 0; i < bar->count(); ++i)
        if (i != current && bar->isTabVisible(i)) other = i;
    if (other < 0) return;
    const QSignalBlocker block(bar);
    bar->setCurrentIndex(other);
    bar->setCurrentIndex(current);
}

// Dock sizes are only honoured once the window has its size, so they are set at the first show,
// in proportion to the window: a fixed 460-pixel left dock left a laptop's centre 600 pixels wide.
void MainWindow::applyDefaultDockSizes() {
    const int width = this->width();
    const int height = this->height();
    resizeDocks({summaryDock_}, {std::clamp(width * 30 / 100, 320, 460)}, Qt::Horizontal);
    resizeDocks({quantizeDock_}, {std::clamp(width * 22 / 100, 300, 420)}, Qt::Horizontal);
    resizeDocks({summaryDock_, treeDock_}, {height * 30 / 100, height * 70 / 100}, Qt::Vertical);
    resizeDocks({logDock_}, {std::max(height * 22 / 100, 160)}, Qt::Vertical);
}

void MainWindow::restoreDefaults() {
    restoreState(defaultLayout_, kStateVersion);
    applyDefaultDockSizes();
    quantize_->restoreDefaults();
    results_->columns()->restoreDefaults();
}

void MainWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    if (shownBefore_) return;
    shownBefore_ = true;
    if (!stateRestored_) applyDefaultDockSizes();
    QTimer::singleShot(0, this, &MainWindow::scrollCurrentTabIntoView);
}

void MainWindow::restoreWindowState() {
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    stateRestored_ = restoreState(settings.value(QStringLiteral("window/state")).toByteArray(), kStateVersion);
    quantize_->restoreSettings(settings);
    results_->restoreSettings(settings);
    // By the page's key, not its index: a tab shown only for some checkpoints (GGUF, Side by side, Importance)
    // moves the others. A page hidden at start (those same tabs) is not restored.
    const QString page = settings.value(QStringLiteral("window/page")).toString();
    for (InspectorPage* p : pages_)
        if (p->key() == page && tabs_->isTabVisible(tabs_->indexOf(p))) tabs_->setCurrentWidget(p);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (job_->isRunning() &&
        !confirm_(tr("Quit QuantScope?"),
                  tr("A quantization is running; quitting cancels it (its finished layers are kept: Start "
                     "with the same settings offers to resume them). Quit anyway?"))) {
        event->ignore();
        return;
    }
    job_->cancel();
    evaluation_->cancel();
    if (settings_ == Settings::Remember) {
        QSettings settings;
        settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
        settings.setValue(QStringLiteral("window/state"), saveState(kStateVersion));
        settings.remove(QStringLiteral("window/tab"));  // an index, as earlier versions saved it
        if (const InspectorPage* page = currentPage()) settings.setValue(QStringLiteral("window/page"), page->key());
        quantize_->saveSettings(settings);
        results_->saveSettings(settings);
    }
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    const QList<QUrl> urls = event->mimeData()->urls();
    if (!urls.isEmpty() && urls.front().isLocalFile()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.isEmpty() || !urls.front().isLocalFile()) return;
    event->acceptProposedAction();
    requestOpen(urls.front().toLocalFile());
}

}  // namespace qs::gui
