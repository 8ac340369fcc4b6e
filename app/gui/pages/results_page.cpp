#include "pages/results_page.h"

#include <algorithm>
#include <limits>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSettings>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include "experts/expert_error_grid.h"
#include "models/results_table_model.h"
#include "pages/column_chooser.h"
#include "pages/fit_columns.h"
#include "plots/expert_error_map.h"
#include "plots/expert_heat_map.h"
#include "plots/kl_per_layer_plot.h"
#include "plots/kl_per_method_plot.h"
#include "plots/output_error_plot.h"
#include "text/number_format.h"

namespace qs::gui {

namespace {

const QString kHiddenColumnsKey = QStringLiteral("results/hiddenColumns");

}  // namespace

ResultsPage::ResultsPage(QWidget* parent)
    : InspectorPage(parent),
      summary_(new QLabel(this)),
      klPerMethod_(new KlPerMethodPlot(this)),
      klPerLayer_(new KlPerLayerPlot(this)),
      outputError_(new OutputErrorPlot(this)),
      tableModel_(new ResultsTableModel(this)),
      tableView_(new QTableView(this)),
      sections_(new QTabWidget(this)),
      expertHeatMap_(new ExpertHeatMap(this)),
      expertStatus_(new QLabel(this)),
      expertErrorMap_(new ExpertErrorMap(this)),
      errorMethod_(new QComboBox(this)) {
    auto* sorted = new QSortFilterProxyModel(this);
    sorted->setSourceModel(tableModel_);
    sorted->setSortRole(ResultsTableModel::SortRole);
    tableView_->setModel(sorted);
    tableView_->setSortingEnabled(true);
    tableView_->sortByColumn(-1, Qt::AscendingOrder);  // the job's method order until a header is clicked
    tableView_->verticalHeader()->hide();
    tableView_->verticalHeader()->setDefaultSectionSize(tableView_->fontMetrics().height() + 6);
    columns_ = new ColumnChooser(tableView_, {ResultsTableModel::MedianColumn});
    tableView_->setSelectionBehavior(QAbstractItemView::SelectRows);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    for (PlotView* plot : {static_cast<PlotView*>(klPerMethod_), static_cast<PlotView*>(klPerLayer_),
                           static_cast<PlotView*>(outputError_)})
        plot->setMinimumWidth(170);  // three side by side in the centre of a 1366-pixel laptop window
    auto* plots = new QSplitter(Qt::Horizontal, this);
    plots->addWidget(klPerMethod_);
    plots->addWidget(klPerLayer_);
    plots->addWidget(outputError_);
    auto* both = new QSplitter(Qt::Vertical, this);
    both->addWidget(plots);
    both->addWidget(tableView_);  // full width: all nine columns readable (fitColumnsToContents)
    both->setStretchFactor(0, 3);
    both->setStretchFactor(1, 2);
    // A MoE job's tokens per expert get a tab of their own (the whole page's height for 48 layers × 128
    // experts); a dense job's page shows no tab bar.
    expertStatus_->setWordWrap(true);
    expertTab_ = new QWidget(this);
    expertTab_->hide();  // until a result has experts: a child outside the tabs would cover the page
    auto* expertLayout = new QVBoxLayout(expertTab_);
    expertLayout->setContentsMargins(0, 0, 0, 0);
    expertLayout->addWidget(expertHeatMap_, 1);
    expertLayout->addWidget(expertStatus_);
    errorTab_ = new QWidget(this);
    errorTab_->hide();  // as the tokens' tab, until a method logged an expert's output error
    auto* errorLayout = new QVBoxLayout(errorTab_);
    errorLayout->setContentsMargins(0, 0, 0, 0);
    auto* errorControls = new QHBoxLayout;
    errorControls->addWidget(new QLabel(tr("Method:"), errorTab_));
    errorControls->addWidget(errorMethod_);
    errorControls->addStretch(1);
    errorLayout->addLayout(errorControls);
    errorLayout->addWidget(expertErrorMap_, 1);
    sections_->setTabBarAutoHide(true);
    sections_->setDocumentMode(true);
    sections_->addTab(both, tr("Methods"));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(summary_);
    layout->addWidget(sections_, 1);

    connect(klPerLayer_, &KlPerLayerPlot::layerClicked, this, &ResultsPage::layerActivated);
    connect(outputError_, &OutputErrorPlot::linearClicked, this, &ResultsPage::linearActivated);
    connect(expertHeatMap_, &ExpertHeatMap::expertClicked, this, &ResultsPage::linearActivated);
    connect(expertErrorMap_, &ExpertErrorMap::expertClicked, this, &ResultsPage::linearActivated);
    connect(errorMethod_, &QComboBox::currentIndexChanged, this, &ResultsPage::drawExpertErrors);
    for (PlotView* plot : {static_cast<PlotView*>(klPerMethod_), static_cast<PlotView*>(klPerLayer_),
                           static_cast<PlotView*>(outputError_), static_cast<PlotView*>(expertHeatMap_),
                           static_cast<PlotView*>(expertErrorMap_)})
        connect(plot, &PlotView::exportFailed, this,
                [this](const QString& m) { emit errorOccurred(tr("Export failed"), m); });
    setResult(nullptr);
}

void ResultsPage::saveSettings(QSettings& settings) const {
    settings.setValue(kHiddenColumnsKey, columns_->hiddenTitles());
}

void ResultsPage::restoreSettings(const QSettings& settings) {
    if (settings.contains(kHiddenColumnsKey))
        columns_->setHiddenTitles(settings.value(kHiddenColumnsKey).toStringList());
    else
        columns_->restoreDefaults();
}

void ResultsPage::setCheckpoint(CheckpointPtr) {
    evaluations_.clear();
    setResult(nullptr);
}

void ResultsPage::setResult(JobResultPtr result) {
    jobResult_ = std::move(result);
    display(withEvaluations());
}

void ResultsPage::addEvaluation(EvaluationPtr evaluation) {
    if (jobResult_ && jobResult_->source != evaluation->openCheckpoint) return;
    if (!evaluations_.empty() && evaluations_.front()->openCheckpoint != evaluation->openCheckpoint) return;
    // A file evaluated again (alone, then beside a second quantization) replaces its row: one row per file.
    const auto same = std::find_if(evaluations_.begin(), evaluations_.end(),
                                   [&](const EvaluationPtr& e) { return e->source == evaluation->source; });
    if (same != evaluations_.end())
        *same = std::move(evaluation);
    else
        evaluations_.push_back(std::move(evaluation));
    display(withEvaluations());
}

namespace {

// An evaluation as a row of the methods: its KL against the original, its size on disk and the bits its
// decoder linears store per weight; no per-layer KL, no module log.
pipeline::MethodResult evaluationRow(const Evaluation& e) {
    pipeline::MethodResult row;
    row.evaluatedCheckpoint = e.label.toStdString();
    row.source = e.source;
    row.bitsPerWeight = e.bitsPerWeight;
    row.checkpointBytes = e.bytesOnDisk;
    row.seconds = e.result.seconds;
    row.kl = e.result.kl;
    return row;
}

}  // namespace

// The job's result as it is while no evaluation joins it; else a copy with a row per evaluation (cheap
// for the GUI's jobs, whose quantized layers stay on disk).
JobResultPtr ResultsPage::withEvaluations() const {
    if (evaluations_.empty()) return jobResult_;
    auto shown = jobResult_ ? std::make_shared<pipeline::JobResult>(*jobResult_) : nullptr;
    if (!shown) {
        shown = std::make_shared<pipeline::JobResult>();
        shown->source = evaluations_.front()->openCheckpoint;
        shown->evaluationTokens = evaluations_.front()->result.evaluationTokens;
    }
    for (const EvaluationPtr& e : evaluations_) shown->methods.push_back(evaluationRow(*e));
    return shown;
}

void ResultsPage::display(JobResultPtr shown) {
    result_ = std::move(shown);
    klPerMethod_->setResult(result_);
    klPerLayer_->setResult(result_);
    outputError_->setResult(result_);
    tableModel_->setResult(result_);
    fitColumnsToContents(tableView_);
    klPerLayer_->setVisible(klPerLayer_->hasData());
    // Evaluations alone have no module log, so no output error per linear: the plot would be empty axes.
    outputError_->setVisible(!result_ || jobResult_);
    showExpertTokens();
    showExpertErrors();
    summary_->setText(summaryText());
}

void ResultsPage::showExpertTokens() {
    expertHeatMap_->setResult(result_);
    const int at = sections_->indexOf(expertTab_);
    if (!expertHeatMap_->hasData()) {
        if (at >= 0) sections_->removeTab(at);
        return;
    }
    if (at < 0) sections_->addTab(expertTab_, tr("Tokens per expert"));
    if (preferExpertTokens_) sections_->setCurrentWidget(expertTab_);
    const ExpertTokenGrid& grid = expertHeatMap_->grid();
    QString text = tr("Calibration tokens the router sent each expert, from the module log: %1 to %2 per expert.")
                       .arg(grid.minTokens())
                       .arg(grid.maxTokens());
    text += QLatin1Char(' ') +
            (grid.starvedCount() == 0
                 ? tr("No expert was starved.")
                 : tr("%n starved expert(s) outlined: fewer calibration tokens than inputs, so a singular "
                      "Hessian and GPTQ working mostly from its damping.",
                      nullptr, grid.starvedCount()));
    expertStatus_->setText(text + QLatin1Char(' ') + tr("Hover for the counts; click to select the expert."));
}

// The methods whose module log has an expert's output error; the tab keeps the method chosen before when
// the new result has it.
void ResultsPage::showExpertErrors() {
    const QString chosen = errorMethod_->currentText();
    {
        const QSignalBlocker blocker(errorMethod_);
        errorMethod_->clear();
        if (result_)
            for (std::size_t m = 0; m < result_->methods.size(); ++m)
                if (!ExpertErrorGrid::fromModuleLogs(result_->methods[m].modules).empty())
                    errorMethod_->addItem(QString::fromStdString(result_->methods[m].label()), static_cast<int>(m));
        if (const int at = errorMethod_->findText(chosen); at >= 0) errorMethod_->setCurrentIndex(at);
    }
    const int at = sections_->indexOf(errorTab_);
    if (errorMethod_->count() == 0) {
        if (at >= 0) sections_->removeTab(at);
        expertErrorMap_->setGrid({}, {});
        return;
    }
    if (at < 0) sections_->addTab(errorTab_, tr("Error per expert"));
    if (preferExpertErrors_) sections_->setCurrentWidget(errorTab_);
    drawExpertErrors();
}

void ResultsPage::drawExpertErrors() {
    const int m = errorMethod_->currentData().toInt();
    if (!result_ || m < 0 || m >= static_cast<int>(result_->methods.size())) return;
    const pipeline::MethodResult& method = result_->methods[static_cast<std::size_t>(m)];
    expertErrorMap_->setGrid(ExpertErrorGrid::fromModuleLogs(method.modules), QString::fromStdString(method.label()));
}

bool ResultsPage::showsExpertErrors() const { return sections_->indexOf(errorTab_) >= 0; }

QStringList ResultsPage::expertErrorMethods() const {
    QStringList labels;
    for (int i = 0; i < errorMethod_->count(); ++i) labels << errorMethod_->itemText(i);
    return labels;
}

bool ResultsPage::chooseExpertErrorMethod(const QString& label) {
    const int at = errorMethod_->findText(label);
    if (at >= 0) errorMethod_->setCurrentIndex(at);
    return at >= 0;
}

bool ResultsPage::showsExpertTokens() const { return sections_->indexOf(expertTab_) >= 0; }

bool ResultsPage::expertTokensInFront() const {
    return showsExpertTokens() && sections_->currentWidget() == expertTab_;
}

QString ResultsPage::summaryText() const {
    if (!result_)
        return tr(
            "No results yet: choose methods in the Quantize panel and press Start, or evaluate a quantized "
            "checkpoint against its original (File ▸ Compare with Original…, then File ▸ Evaluate against "
            "Original).");
    return (jobResultText() + QLatin1Char(' ') + evaluationsText()).trimmed();
}

QString ResultsPage::jobResultText() const {
    if (!jobResult_) return {};
    QString text = tr("%n method(s); calibration %1 tokens, evaluation %2 tokens; total %3.", nullptr,
                      static_cast<int>(jobResult_->methods.size()))
                       .arg(jobResult_->calibrationTokens)
                       .arg(jobResult_->evaluationTokens)
                       .arg(durationText(jobResult_->seconds));
    for (const pipeline::MethodResult& m : jobResult_->methods) {
        if (m.kl.count == 0) continue;
        // Every method is scored on the same positions against the same original.
        text += tr(" Reference PPL %1 over %2 positions.").arg(m.kl.pplBase.value, 0, 'f', 3).arg(m.kl.count);
        break;
    }
    if (const int starved = expertHeatMap_->grid().starvedCount(); starved > 0)
        text += tr(" %n expert(s) starved of calibration tokens (Tokens per expert).", nullptr, starved);
    if (const auto& kv = jobResult_->kvCacheOnlyKl)
        text += tr(" The FP8 KV cache alone (original weights): mean KLD %1, same top token %2 %.")
                    .arg(kv->meanKld.value, 0, 'g', 4)
                    .arg(100.0 * kv->sameTop.value, 0, 'f', 2);
    return text;
}

// One sentence per evaluation: what it was compared with, on how much text, and why it has no per-layer
// line (quantscope-cli eval measures the checkpoint as a whole).
QString ResultsPage::evaluationsText() const {
    if (evaluations_.empty()) return {};
    // A second quantization's evaluation shares the first's original and text: one sentence for both.
    const Evaluation& first = *evaluations_.front();
    const bool shared = std::all_of(evaluations_.begin(), evaluations_.end(), [&first](const EvaluationPtr& e) {
        return e->original == first.original && e->result.evaluationTokens == first.result.evaluationTokens;
    });
    if (shared && evaluations_.size() > 1) {
        QStringList each;
        for (const EvaluationPtr& e : evaluations_)
            each << tr("%1 (%2)").arg(e->label, durationText(e->result.seconds));
        return tr("%1 evaluated against %2 (reference PPL %3) on %4 tokens, each as a whole: no per-layer KL.")
            .arg(each.join(tr(" and ")), first.original)
            .arg(first.result.kl.pplBase.value, 0, 'f', 3)
            .arg(first.result.evaluationTokens);
    }
    QString text;
    for (const EvaluationPtr& e : evaluations_)
        text += (text.isEmpty() ? QString() : QStringLiteral(" ")) +
                tr("%1 evaluated against %2 (reference PPL %3) on %4 tokens in %5, as a whole: no per-layer KL.")
                    .arg(e->label, e->original)
                    .arg(e->result.kl.pplBase.value, 0, 'f', 3)
                    .arg(e->result.evaluationTokens)
                    .arg(durationText(e->result.seconds));
    return text;
}

}  // namespace qs::gui
