#include "pages/histogram_page.h"

#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <tuple>

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include "pages/quantized_codes.h"
#include "plots/plot_view.h"
#include "text/number_format.h"

namespace qs::gui {
namespace {

const QColor kBulkColor(70, 130, 180);
const QColor kTailColor(214, 69, 65);

QToolButton* exportButton(PlotView* plot, QWidget* parent) {
    auto* button = new QToolButton(parent);
    button->setText(QObject::tr("Export"));
    button->setPopupMode(QToolButton::InstantPopup);
    button->setMenu(plot->exportMenu());
    return button;
}

}  // namespace

HistogramPage::HistogramPage(QWidget* parent)
    : InspectorPage(parent),
      bins_(new QSpinBox(this)),
      log_(new QCheckBox(tr("Log counts"), this)),
      sigma_(new QDoubleSpinBox(this)),
      plot_(new PlotView(this)),
      stats_(new QLabel(this)) {
    log_->setObjectName(QStringLiteral("logCounts"));
    bins_->setRange(4, 4096);
    bins_->setValue(128);
    bins_->setKeyboardTracking(false);  // one job per entered number, not per keystroke
    sigma_->setRange(0.5, 20.0);
    sigma_->setSingleStep(0.5);
    sigma_->setDecimals(1);
    sigma_->setValue(3.0);
    sigma_->setKeyboardTracking(false);
    stats_->setWordWrap(true);
    stats_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    stats_->setTextFormat(Qt::RichText);

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Bins:"), this));
    controls->addWidget(bins_);
    controls->addSpacing(12);
    controls->addWidget(new QLabel(tr("Tails beyond ±k·σ, k ="), this));
    controls->addWidget(sigma_);
    controls->addSpacing(12);
    controls->addWidget(log_);
    controls->addStretch(1);
    controls->addWidget(exportButton(plot_, this));
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(controls);
    layout->addWidget(plot_, 1);
    layout->addWidget(stats_);

    plot_->setTitle(QString());
    plot_->xAxis->setLabel(tr("value"));
    plot_->setDefaultFileName(QStringLiteral("histogram"));
    plot_->setToolTipProvider([this](double x, double) { return toolTipAt(x); });
    plot_->setCsvProvider([this] { return csv(); });

    connect(bins_, &QSpinBox::valueChanged, this, &HistogramPage::refresh);
    connect(sigma_, &QDoubleSpinBox::valueChanged, this, &HistogramPage::refresh);
    connect(log_, &QCheckBox::toggled, this, &HistogramPage::draw);
    connect(plot_, &PlotView::resetViewRequested, this, &HistogramPage::resetView);
    connect(plot_, &PlotView::exportFailed, this,
            [this](const QString& m) { emit errorOccurred(tr("Export failed"), m); });
    connect(&runner_, &JobRunner::busyChanged, this, &InspectorPage::busyChanged);
    clearPlot(tr("Open a checkpoint and select a tensor."));
}

void HistogramPage::setCheckpoint(CheckpointPtr checkpoint) {
    checkpoint_ = std::move(checkpoint);
    tensor_.clear();
    runner_.cancel();
    clearPlot(tr("Select a tensor."));
}

void HistogramPage::setTensor(const QString& name) {
    tensor_ = name;
    refresh();
}

void HistogramPage::setBins(int bins) { bins_->setValue(bins); }

bool HistogramPage::isBusy() const { return runner_.isBusy() || (stale_ && isVisible()); }

void HistogramPage::showEvent(QShowEvent* event) {
    InspectorPage::showEvent(event);
    if (stale_) refresh();
}

void HistogramPage::refresh() {
    if (!checkpoint_ || tensor_.isEmpty()) return;
    if (!isVisible()) {
        stale_ = true;  // computed when the tab is shown, not for every selection made elsewhere
        return;
    }
    stale_ = false;
    stats_->setText(tr("Computing the histogram of %1…").arg(tensor_.toHtmlEscaped()));
    analysis::HistogramOptions options;
    options.bins = bins_->value();
    options.tailSigma = sigma_->value();
    runner_.start(
        [checkpoint = checkpoint_, name = tensor_.toStdString(), options](const qs::CancelToken& token) {
            analysis::HistogramOptions o = options;
            o.cancel = token;
            return computeShown(*checkpoint, name, o, token);
        },
        [this, tensor = tensor_](Shown shown) { showResult(tensor, std::move(shown)); },
        [this](const QString& message) {
            clearPlot(message.toHtmlEscaped());
            emit errorOccurred(tr("Histogram failed"), message);
        });
}

// On the worker. A quantized linear's packed codes are shown as the weights they decode to (with
// the format's own arithmetic, formats::LinearReader); any other tensor as it is stored.
HistogramPage::Shown HistogramPage::computeShown(const io::Checkpoint& checkpoint, const std::string& name,
                                                 const analysis::HistogramOptions& options,
                                                 const qs::CancelToken& token) {
    if (const auto decoded = decodeCodes(checkpoint, name)) {
        token.throwIfCancelled();
        const MatrixF& w = decoded->weight;
        return {
            analysis::computeHistogram(std::span<const float>(w.data(), static_cast<std::size_t>(w.size())), options),
            QString::fromStdString(decoded->scheme)};
    }
    return {analysis::computeHistogram(checkpoint.tensor(name), options), QString()};
}

void HistogramPage::showResult(const QString& tensor, Shown shown) {
    shownTensor_ = tensor;
    histogram_ = std::move(shown.histogram);
    decodedAs_ = std::move(shown.decodedAs);
    draw();
}

void HistogramPage::clearPlot(const QString& message) {
    histogram_.reset();
    decodedAs_.clear();
    shownTensor_.clear();
    plot_->clearPlottables();
    plot_->clearItems();
    plot_->setTitle(QString());
    stats_->setText(message);
    plot_->replot();
}

void HistogramPage::draw() {
    if (!histogram_) return;
    const analysis::Histogram& h = *histogram_;
    plot_->clearPlottables();
    plot_->clearItems();
    plot_->setTitle(decodedAs_.isEmpty() ? shownTensor_ : tr("%1, decoded (%2)").arg(shownTensor_, decodedAs_));

    // Two bar series: the bulk, and the bins whose centre lies beyond ±k·σ.
    auto* bulk = new QCPBars(plot_->xAxis, plot_->yAxis);
    auto* tails = new QCPBars(plot_->xAxis, plot_->yAxis);
    const double low = h.mean - h.tailSigma * h.stddev;
    const double high = h.mean + h.tailSigma * h.stddev;
    for (const auto& [bars, color, name] :
         {std::tuple{bulk, kBulkColor, tr("within ±%1σ")}, std::tuple{tails, kTailColor, tr("beyond ±%1σ")}}) {
        bars->setWidthType(QCPBars::wtPlotCoords);
        bars->setWidth(h.edges[1] - h.edges[0]);
        bars->setPen(Qt::NoPen);
        bars->setBrush(color);
        bars->setName(name.arg(h.tailSigma));
    }
    for (int b = 0; b < h.bins(); ++b) {
        const auto count = h.counts[static_cast<std::size_t>(b)];
        if (count == 0) continue;  // nothing to draw, and log axes cannot show zero
        const double centre = 0.5 * (h.edges[static_cast<std::size_t>(b)] + h.edges[static_cast<std::size_t>(b) + 1]);
        // Zero spread (g_idx, one global scale): no value lies beyond ±kσ of the mean; the one bar's
        // centre merely differs from it by half a bin.
        const bool tail = h.stddev > 0.0 && (centre < low || centre > high);
        (tail ? tails : bulk)->addData(centre, static_cast<double>(count));
    }
    if (h.stddev > 0.0) drawTailMarks(h);

    const bool log = log_->isChecked();
    if (log)
        plot_->setLogValueAxis();
    else
        plot_->setLinearValueAxis();
    plot_->yAxis->setLabel(log ? tr("count (log scale)") : tr("count"));
    stats_->setText(statsText());
    resetView();
}

void HistogramPage::drawTailMarks(const analysis::Histogram& h) {
    const double k = h.tailSigma;
    const double span = std::max(h.edges.back() - h.edges.front(), 1e-30);
    const std::array<std::pair<double, QString>, 3> marks{{
        {h.mean - k * h.stddev, QStringLiteral("−%1σ").arg(k)},
        {h.mean, tr("mean")},
        {h.mean + k * h.stddev, QStringLiteral("+%1σ").arg(k)},
    }};
    for (const auto& [x, label] : marks) {
        const bool isMean = label == tr("mean");
        auto* line = new QCPItemStraightLine(plot_);
        line->point1->setCoords(x, 0);
        line->point2->setCoords(x, 1);
        line->setPen(QPen(isMean ? QColor(90, 90, 90) : kTailColor, 1.2, Qt::DashLine));
        auto* text = new QCPItemText(plot_);
        text->position->setTypeX(QCPItemPosition::ptPlotCoords);
        text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        text->position->setCoords(x, 0.0);
        text->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
        text->setText(label);
        text->setColor(isMean ? QColor(90, 90, 90) : kTailColor);
        text->setBrush(QColor(255, 255, 255, 200));
    }
    // Shade everything beyond the ±k·σ lines, far enough out to survive panning.
    for (const auto& [from, to] : {std::pair{h.edges.front() - 100 * span, marks[0].first},
                                   std::pair{marks[2].first, h.edges.back() + 100 * span}}) {
        auto* shade = new QCPItemRect(plot_);
        shade->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
        shade->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
        shade->topLeft->setCoords(from, 0);
        shade->bottomRight->setCoords(to, 1);
        shade->setPen(Qt::NoPen);
        shade->setBrush(QColor(kTailColor.red(), kTailColor.green(), kTailColor.blue(), 28));
        shade->setLayer(QStringLiteral("background"));
    }
}

void HistogramPage::resetView() {
    if (!histogram_) return;
    const analysis::Histogram& h = *histogram_;
    const double low = std::min(h.edges.front(), h.mean - h.tailSigma * h.stddev);
    const double high = std::max(h.edges.back(), h.mean + h.tailSigma * h.stddev);
    const double margin = 0.03 * (high - low);
    plot_->xAxis->setRange(low - margin, high + margin);
    const double peak =
        static_cast<double>(std::max<std::uint64_t>(1, *std::max_element(h.counts.begin(), h.counts.end())));
    if (log_->isChecked()) {
        plot_->yAxis->setRange(0.7, peak * 3.0);
    } else {
        plot_->yAxis->setRange(0.0, peak * 1.12);  // room for the σ labels at the top
    }
    plot_->replot();
}

QString HistogramPage::statsText() const {
    if (!histogram_ || !checkpoint_) return {};
    const analysis::Histogram& h = *histogram_;
    const QLocale locale;
    QString text;
    if (const io::CheckpointTensor* t = checkpoint_->find(shownTensor_.toStdString())) {
        if (decodedAs_.isEmpty())
            text += QStringLiteral("<b>%1</b> · %2 %3 · %4 values")
                        .arg(shownTensor_.toHtmlEscaped(), QString::fromStdString(t->info->typeName()),
                             shapeText(t->info->shape), locale.toString(qulonglong(h.count)));
        else
            text +=
                tr("<b>%1</b> · %2 %3 decoded from %4 · %5 weights")
                    .arg(shownTensor_.toHtmlEscaped(), QString::fromStdString(t->info->typeName()),
                         shapeText(t->info->shape), decodedAs_.toHtmlEscaped(), locale.toString(qulonglong(h.count)));
        if (h.nonFinite > 0) text += tr(" (+%1 NaN/Inf left out)").arg(h.nonFinite);
        text += QStringLiteral("<br>");
    }
    const double expected = analysis::gaussianTailFraction(h.tailSigma);
    text += tr("mean %1 · σ %2 · min %3 · max %4 · beyond ±%5σ: %6 below, %7 above = %8 % (a Gaussian: %9 %)")
                .arg(valueText(h.mean), valueText(h.stddev), valueText(h.min), valueText(h.max))
                .arg(h.tailSigma)
                .arg(locale.toString(qulonglong(h.tailBelow)), locale.toString(qulonglong(h.tailAbove)))
                .arg(100.0 * h.tailFraction(), 0, 'g', 3)
                .arg(100.0 * expected, 0, 'g', 3);
    return text;
}

QString HistogramPage::toolTipAt(double x) const {
    if (!histogram_) return {};
    const analysis::Histogram& h = *histogram_;
    const int b = h.binOf(x);
    if (b < 0) return {};
    const auto count = h.counts[static_cast<std::size_t>(b)];
    const double share = h.count ? 100.0 * static_cast<double>(count) / static_cast<double>(h.count) : 0.0;
    return tr("bin %1: [%2, %3%4\ncount %5 (%6 %)")
        .arg(b)
        .arg(valueText(h.edges[static_cast<std::size_t>(b)]), valueText(h.edges[static_cast<std::size_t>(b) + 1]))
        .arg(b + 1 == h.bins() ? QStringLiteral("]") : QStringLiteral(")"))
        .arg(count)
        .arg(share, 0, 'g', 4);
}

CsvTable HistogramPage::csv() const {
    CsvTable table;
    table.header = {QStringLiteral("bin"), QStringLiteral("lower"), QStringLiteral("upper"), QStringLiteral("count")};
    if (!histogram_) return table;
    const analysis::Histogram& h = *histogram_;
    for (int b = 0; b < h.bins(); ++b) {
        const auto i = static_cast<std::size_t>(b);
        table.rows.append({QString::number(b), QString::number(h.edges[i], 'g', 17),
                           QString::number(h.edges[i + 1], 'g', 17), QString::number(h.counts[i])});
    }
    return table;
}

}  // namespace qs::gui
