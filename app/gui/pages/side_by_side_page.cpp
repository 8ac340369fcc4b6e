#include "pages/side_by_side_page.h"

#include <algorithm>
#include <span>

#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "qs/error.h"
#include "qs/formats/quantization_diff.h"
#include "qs/formats/rounding_error.h"
#include "qs/io/gguf_file.h"

#include "models/side_by_side_model.h"
#include "pages/fit_columns.h"
#include "plots/plot_view.h"

namespace qs::gui {
namespace {

const QColor kBarColor(70, 130, 180);

// The file a .gguf checkpoint is, else its folder: what the caption calls A and B.
QString checkpointName(const io::Checkpoint& checkpoint) {
    const std::filesystem::path& path = checkpoint.gguf() ? checkpoint.gguf()->path() : checkpoint.root();
    return QString::fromStdString(path.filename().string());
}

analysis::Histogram histogramOf(const std::vector<float>& values, const qs::CancelToken& token) {
    analysis::HistogramOptions options;
    options.cancel = token;
    return analysis::computeHistogram(std::span<const float>(values), options);
}

// On the runner's worker: the selected linear's decoded A − decoded B, and each one's decoded − original
// when there is one, counted (each linear decoded once).
SideBySidePage::Difference differenceOf(const io::Checkpoint& a, const io::Checkpoint& b,
                                        const io::Checkpoint* original, const formats::LinearDiff& linear,
                                        const qs::CancelToken& token) {
    SideBySidePage::Difference d;
    d.linear = QString::fromStdString(linear.ref.prefix);
    d.differs = linear.differs;
    d.rms = linear.rmsAMinusB;
    if (!linear.differs && !original) return d;
    const MatrixF decodedA = formats::LinearReader(a).decode(linear.ref).weight;
    const MatrixF decodedB = formats::LinearReader(b).decode(linear.ref).weight;
    token.throwIfCancelled();
    if (linear.differs)
        d.histogram = histogramOf(formats::roundingError(decodedA, decodedB, linear.ref).difference, token);
    if (original) {
        const MatrixF o = formats::LinearReader(*original).decode(linear.ref).weight;
        d.errorA = histogramOf(formats::roundingError(decodedA, o, linear.ref).difference, token);
        d.errorB = histogramOf(formats::roundingError(decodedB, o, linear.ref).difference, token);
    }
    return d;
}

// A histogram as a step line of density (its bins' counts over their width and the total), so that two
// histograms of different bins read on one axis.
void addDensity(PlotView* plot, const analysis::Histogram& h, const QString& name, const QColor& color) {
    auto* graph = plot->addGraph();
    graph->setName(name);
    graph->setPen(QPen(color, 2));
    graph->setLineStyle(QCPGraph::lsStepCenter);
    const double width = h.edges[1] - h.edges[0];
    const double total = std::max<double>(1.0, static_cast<double>(h.count));
    for (int b = 0; b < h.bins(); ++b) {
        const auto at = static_cast<std::size_t>(b);
        graph->addData(0.5 * (h.edges[at] + h.edges[at + 1]), double(h.counts[at]) / (total * width));
    }
}

}  // namespace

SideBySidePage::SideBySidePage(QWidget* parent)
    : InspectorPage(parent),
      job_(new DiffJob(this)),
      model_(new SideBySideModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      caption_(new QLabel(this)),
      differsOnly_(new QCheckBox(tr("Only tensors that differ"), this)),
      progress_(new QProgressBar(this)),
      cancel_(new QPushButton(tr("Cancel"), this)),
      table_(new QTableView(this)),
      plot_(new PlotView(this)),
      errorPlot_(new PlotView(this)) {
    caption_->setWordWrap(true);
    caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    progress_->setRange(0, 1000);
    progress_->setTextVisible(false);
    progress_->setMaximumWidth(160);
    progress_->hide();
    cancel_->hide();
    auto* controls = new QHBoxLayout;
    controls->addWidget(differsOnly_);
    controls->addStretch(1);
    controls->addWidget(progress_);
    controls->addWidget(cancel_);
    setUpTable();
    setUpPlots();
    auto* splitter = new QSplitter(Qt::Vertical, this);
    splitter->addWidget(table_);
    splitter->addWidget(plots_);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(caption_);
    layout->addLayout(controls);
    layout->addWidget(splitter, 1);

    connect(differsOnly_, &QCheckBox::toggled, this,
            [this](bool only) { proxy_->setFilterFixedString(only ? QStringLiteral("yes") : QString()); });
    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &SideBySidePage::onRowSelected);
    connect(&runner_, &JobRunner::busyChanged, this, [this] { emit busyChanged(isBusy()); });
    connectJob();
    setCheckpoint(nullptr);
}

void SideBySidePage::setUpTable() {
    proxy_->setSourceModel(model_);
    proxy_->setSortRole(SideBySideModel::SortRole);
    proxy_->setFilterRole(SideBySideModel::DiffersRole);
    proxy_->setFilterKeyColumn(SideBySideModel::LinearColumn);
    table_->setObjectName(QStringLiteral("sideBySideTable"));
    table_->setModel(proxy_);
    table_->setSortingEnabled(true);
    table_->sortByColumn(SideBySideModel::LinearColumn, Qt::AscendingOrder);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setMinimumSectionSize(30);
    table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
    table_->setWordWrap(false);
}

void SideBySidePage::setUpPlots() {
    plot_->setDefaultFileName(QStringLiteral("a_minus_b"));
    plot_->xAxis->setLabel(tr("decoded A − decoded B"));
    plot_->yAxis->setLabel(tr("weights"));
    errorPlot_->setDefaultFileName(QStringLiteral("errors_a_b"));
    errorPlot_->xAxis->setLabel(tr("decoded − original"));
    errorPlot_->yAxis->setLabel(tr("density"));
    errorPlot_->yAxis->setTickLabels(false);  // a density: the shapes compare, not the numbers
    errorPlot_->hide();
    for (PlotView* plot : {plot_, errorPlot_}) {
        // Two abreast in a laptop's centre, the docks beside them (a plot's own minimum would push the docks).
        plot->setMinimumSize(150, 150);
        plot->xAxis->ticker()->setTickCount(3);  // half a laptop's centre: three short labels fit
        plot->xAxis->ticker()->setTickStepStrategy(QCPAxisTicker::tssReadability);
        connect(plot, &PlotView::exportFailed, this,
                [this](const QString& m) { emit errorOccurred(tr("Export failed"), m); });
    }
    plots_ = new QSplitter(Qt::Horizontal, this);
    plots_->addWidget(plot_);
    plots_->addWidget(errorPlot_);
}

// The comparison's progress and end on the page; a cancel that came from opening another checkpoint
// (no second any more) or from a restart says nothing.
void SideBySidePage::connectJob() {
    connect(cancel_, &QPushButton::clicked, job_, &DiffJob::cancel);
    connect(job_, &DiffJob::runningChanged, this, &SideBySidePage::setRunning);
    connect(job_, &DiffJob::progressed, this, [this](const qs::Progress& p) {
        progress_->setValue(static_cast<int>(1000.0 * p.fraction));
        status_ = tr("Decoding linear %1 of %2…").arg(p.step).arg(p.steps);
        caption_->setText(captionText());
    });
    connect(job_, &DiffJob::finished, this, &SideBySidePage::showDiff);
    connect(job_, &DiffJob::cancelled, this, [this] {
        if (!second_ || restart_) return;
        status_ = tr("The comparison was cancelled.");
        caption_->setText(captionText());
    });
    connect(job_, &DiffJob::failed, this, [this](const QString& message) {
        status_ = tr("The comparison failed.");
        caption_->setText(captionText());
        emit errorOccurred(tr("Comparison failed"), message);
    });
}

void SideBySidePage::setCheckpoint(CheckpointPtr checkpoint) {
    restart_ = false;
    stale_ = false;
    job_->cancel();
    runner_.cancel();
    checkpoint_ = std::move(checkpoint);
    second_.reset();
    original_.reset();
    secondPath_.clear();
    model_->setDiff(nullptr);
    showDifference(std::nullopt);
    status_ = tr("File ▸ Compare with Second Quantization… names another quantization of this model.");
    caption_->setText(captionText());
}

void SideBySidePage::setTensor(const QString& name) {
    tensor_ = name;
    for (int row = 0; row < model_->rowCount(); ++row) {
        const QString prefix = QString::fromStdString(model_->linear(row).ref.prefix);
        if (name == prefix || name.startsWith(prefix + QLatin1Char('.'))) {
            selectLinear(prefix);
            return;
        }
    }
}

bool SideBySidePage::selectLinear(const QString& prefix) {
    for (int row = 0; row < proxy_->rowCount(); ++row) {
        const QModelIndex index = proxy_->index(row, SideBySideModel::LinearColumn);
        if (model_->linear(proxy_->mapToSource(index).row()).ref.prefix != prefix.toStdString()) continue;
        table_->setCurrentIndex(index);
        table_->scrollTo(index);
        return true;
    }
    return false;
}

bool SideBySidePage::isBusy() const {
    return job_->isRunning() || restart_ || runner_.isBusy() || (stale_ && isVisible());
}

void SideBySidePage::showEvent(QShowEvent* event) {
    InspectorPage::showEvent(event);
    if (stale_) onRowSelected();
}

bool SideBySidePage::setSecond(const QString& path) {
    if (!checkpoint_) return false;
    try {
        auto second = std::make_shared<const io::Checkpoint>(io::Checkpoint::open(path.toStdString()));
        formats::checkSameModel(formats::LinearReader(*checkpoint_), formats::LinearReader(*second));
        second_ = std::move(second);
        secondPath_ = path;
    } catch (const std::exception& e) {  // qs::Error, and filesystem errors of unreadable paths
        emit errorOccurred(tr("Not a quantization of this model"), QString::fromUtf8(e.what()));
        return false;
    }
    compare();
    return true;
}

void SideBySidePage::setOriginal(CheckpointPtr original) {
    original_ = std::move(original);
    if (second_) compare();
}

// A comparison still running is cancelled first; this one starts once its worker has gone.
void SideBySidePage::compare() {
    model_->setDiff(nullptr);
    showDifference(std::nullopt);
    status_ = tr("Decoding both…");
    caption_->setText(captionText());
    if (job_->isRunning()) {
        restart_ = true;
        job_->cancel();
        return;
    }
    job_->start(checkpoint_, second_, original_);
}

void SideBySidePage::setRunning(bool running) {
    progress_->setVisible(running);
    cancel_->setVisible(running);
    if (running) progress_->setValue(0);
    if (!running && restart_) {
        restart_ = false;
        compare();
    }
    emit busyChanged(isBusy());
}

void SideBySidePage::showDiff(const DiffPtr& diff) {
    model_->setDiff(diff);
    status_.clear();
    caption_->setText(captionText());
    // Each one's error against the original, else the RMS of A − B (the histogram's title gives it too):
    // eight columns fit a laptop's centre better than nine.
    for (const int column : {SideBySideModel::ErrorAColumn, SideBySideModel::ErrorBColumn})
        table_->setColumnHidden(column, !diff->withOriginal);
    table_->setColumnHidden(SideBySideModel::RmsDifferenceColumn, diff->withOriginal);
    fitColumnsToContents(table_);  // the eight columns fit the centre of a 1366-pixel laptop
    // The linear of the tensor selected in the tree, else the first that differs (else the first), so that
    // the histogram shows at once.
    setTensor(tensor_);
    if (table_->currentIndex().isValid()) return;
    const auto differing = std::find_if(diff->linears.begin(), diff->linears.end(),
                                        [](const formats::LinearDiff& d) { return d.differs; });
    if (!diff->linears.empty())
        selectLinear(
            QString::fromStdString((differing != diff->linears.end() ? *differing : diff->linears.front()).ref.prefix));
}

// Decoded only while the tab is shown: the tree's selection on another tab marks it stale instead.
void SideBySidePage::onRowSelected() {
    const QModelIndex current = proxy_->mapToSource(table_->currentIndex());
    if (!current.isValid() || !model_->diff()) return;
    stale_ = !isVisible();
    if (stale_) return;
    const formats::LinearDiff linear = model_->linear(current.row());
    // The original the table's errors were measured against (none when named after the comparison ran).
    CheckpointPtr original = model_->diff()->withOriginal ? original_ : nullptr;
    runner_.start([a = checkpoint_, b = second_, original = std::move(original), linear](
                      const qs::CancelToken& token) { return differenceOf(*a, *b, original.get(), linear, token); },
                  [this](Difference d) { showDifference(std::move(d)); },
                  [this](const QString& message) {
                      showDifference(std::nullopt);
                      emit errorOccurred(tr("Decoding failed"), message);
                  });
}

void SideBySidePage::showDifference(std::optional<Difference> difference) {
    difference_ = std::move(difference);
    drawDifference();
    drawErrors();
}

void SideBySidePage::drawErrors() {
    errorPlot_->clearGraphs();
    const bool shown = difference_ && difference_->errorA && difference_->errorB;
    if (shown && errorPlot_->isHidden()) plots_->setSizes({1, 1});  // half each, once it appears
    errorPlot_->setVisible(shown);
    if (!shown) return;
    errorPlot_->setTitle(tr("Errors of A and B"));
    addDensity(errorPlot_, *difference_->errorA, tr("A"), QColor(70, 130, 180));
    addDensity(errorPlot_, *difference_->errorB, tr("B"), QColor(230, 120, 30));
    errorPlot_->legend->setVisible(true);
    errorPlot_->rescaleAxes();
    errorPlot_->yAxis->setRangeLower(0.0);
    errorPlot_->replot();
}

void SideBySidePage::drawDifference() {
    plot_->clearPlottables();
    const bool bars = difference_ && difference_->differs && !difference_->histogram.counts.empty();
    for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis}) {
        axis->setVisible(bars);
        axis->grid()->setVisible(bars);
    }
    if (!difference_) {
        plot_->setTitle(model_->diff() ? tr("Select a linear of the table.") : QString());
    } else if (!bars) {
        plot_->setTitle(difference_->errorA ? tr("A = B, bit for bit")
                                            : tr("%1: decoded A and B are the same, bit for bit")
                                                  .arg(shortLinearName(difference_->linear.toStdString())));
    } else {
        const analysis::Histogram& h = difference_->histogram;
        // Beside the errors' plot, half the width: the table's selected row names the linear.
        const QString rms = QString::number(difference_->rms, 'g', 3);
        plot_->setTitle(
            difference_->errorA
                ? tr("A − B, RMS %1").arg(rms)
                : tr("%1: decoded A − decoded B, RMS %2").arg(shortLinearName(difference_->linear.toStdString()), rms));
        auto* plotted = new QCPBars(plot_->xAxis, plot_->yAxis);
        plotted->setWidthType(QCPBars::wtPlotCoords);
        plotted->setWidth(h.edges[1] - h.edges[0]);
        plotted->setPen(Qt::NoPen);
        plotted->setBrush(kBarColor);
        for (int b = 0; b < h.bins(); ++b) {
            const auto at = static_cast<std::size_t>(b);
            if (h.counts[at] > 0) plotted->addData(0.5 * (h.edges[at] + h.edges[at + 1]), double(h.counts[at]));
        }
        plot_->xAxis->setNumberFormat(QStringLiteral("g"));
        plot_->xAxis->setNumberPrecision(3);
        plot_->xAxis->setRange(h.edges.front(), h.edges.back());
        plot_->yAxis->setRange(0.0, 1.05 * double(*std::max_element(h.counts.begin(), h.counts.end())));
    }
    plot_->replot();
}

QString SideBySidePage::captionText() const {
    QString text;
    if (checkpoint_ && second_) {
        text = tr("A: %1 (open) · B: %2.").arg(checkpointName(*checkpoint_), checkpointName(*second_));
        if (const DiffPtr& diff = model_->diff()) {
            const auto differing = std::count_if(diff->linears.begin(), diff->linears.end(),
                                                 [](const formats::LinearDiff& d) { return d.differs; });
            text +=
                QLatin1Char(' ') + tr("%1 of %2 quantized linears differ.").arg(differing).arg(diff->linears.size());
            text +=
                QLatin1Char(' ') + (diff->withOriginal ? tr("Errors are RMS of decoded − original.")
                                                       : tr("File ▸ Compare with Original… adds each one's error."));
        }
    }
    if (!status_.isEmpty()) text += (text.isEmpty() ? QString() : QStringLiteral(" ")) + status_;
    return text;
}

}  // namespace qs::gui
