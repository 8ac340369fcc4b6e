#include "pages/quantized_linear_page.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <string>

#include <QGridLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/linear_reader.h"
#include "qs/formats/rounding_error.h"

#include "pages/quantized_codes.h"
#include "plots/plot_view.h"
#include "text/number_format.h"

namespace qs::gui {
namespace {

const QColor kBarColor(70, 130, 180);
const QColor kUnusedColor(190, 190, 190);

std::span<const float> valuesOf(const MatrixF& m) { return {m.data(), static_cast<std::size_t>(m.size())}; }

// What the scales are stored as and how many weights share one: a sentence of the caption.
QString scaleNote(const formats::LayerQuantInfo& layer, const quant::QuantizedLinear& parts) {
    const QString block =
        parts.blockRows > 1 && parts.blockCols < parts.cols
            ? QObject::tr("one per %1×%2 block").arg(parts.blockRows).arg(parts.blockCols)
        : parts.blockRows >= parts.rows && parts.blockCols >= parts.cols ? QObject::tr("one for the whole tensor")
        : parts.blockCols >= parts.cols                                  ? QObject::tr("one per output channel")
                                        : QObject::tr("one per %1 inputs of a row").arg(parts.blockCols);
    if (layer.scheme == "nvfp4")
        return QObject::tr("E4M3 block scales, %1; global scale %2 (weight_global_scale stores its inverse, %3).")
            .arg(block, valueText(parts.globalScale),
                 valueText(parts.globalScale != 0.0f ? 1.0 / parts.globalScale : 0.0));
    if (layer.scheme == "mxfp4") return QObject::tr("E8M0 block scales (powers of two), %1.").arg(block);
    if (layer.scheme == "nf4") return QObject::tr("absmax scales, %1.").arg(block);
    return QObject::tr("Scales %1.").arg(block);
}

// On the worker: everything the page draws for the linear `tensor` belongs to; nullopt for a tensor of
// no quantized linear.
std::optional<QuantizedLinearPage::Views> computeViews(const io::Checkpoint& checkpoint, const io::Checkpoint* original,
                                                       const std::string& tensor, const qs::CancelToken& token) {
    const formats::FormatInfo format = formats::detect(checkpoint);  // configs and headers only
    const auto layer = linearOfPart(format, tensor);
    if (!layer) return std::nullopt;
    const formats::LinearReader reader(checkpoint, format);
    const formats::DecodedLinear decoded = reader.decode(layer->ref);
    token.throwIfCancelled();
    const quant::QuantizedLinear& parts = decoded.parts;

    QuantizedLinearPage::Views v;
    v.linear = QString::fromStdString(layer->ref.prefix);
    v.scheme = QString::fromStdString(layer->summary());
    const bool perWeightCodes =
        parts.codeKind != quant::CodeKind::Trellis && parts.codeKind != quant::CodeKind::GgmlBlocks;
    if (decoded.partsExact && perWeightCodes) {
        v.usage = quant::codeUsage(parts);
        v.scales = analysis::computeHistogram(valuesOf(parts.scales));
        v.scaleNote = scaleNote(*layer, parts);
        if (parts.codeKind == quant::CodeKind::UnsignedInt && parts.zeros.size() > 0)
            v.zeros = analysis::computeHistogram(valuesOf(parts.zeros));
    } else {
        v.usageNote = QObject::tr("%1 stores no code per weight that could be counted here.").arg(v.scheme);
    }
    if (layer->actOrder) v.gIdx = parts.gIdx;
    const std::string& prefix = layer->ref.prefix;
    v.storesGIdx = checkpoint.find(prefix + ".g_idx") || checkpoint.find(prefix + ".weight_g_idx");
    if (original) {
        try {
            const formats::RoundingError e =
                formats::roundingError(reader, formats::LinearReader(*original), layer->ref);
            v.error = analysis::computeHistogram(std::span<const float>(e.difference));
            v.errorRms = e.rms;
            v.originalRms = e.originalRms;
        } catch (const Error& e) {
            v.errorProblem = QString::fromUtf8(e.what());
        }
    }
    return v;
}

void drawHistogram(PlotView* plot, const analysis::Histogram& h, const QColor& color) {
    auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
    bars->setWidthType(QCPBars::wtPlotCoords);
    bars->setWidth(h.edges[1] - h.edges[0]);
    bars->setPen(Qt::NoPen);
    bars->setBrush(color);
    for (int b = 0; b < h.bins(); ++b) {
        const auto count = h.counts[static_cast<std::size_t>(b)];
        if (count > 0)
            bars->addData(0.5 * (h.edges[static_cast<std::size_t>(b)] + h.edges[static_cast<std::size_t>(b) + 1]),
                          double(count));
    }
    // "0.016", not "0.0160"; three digits so that NVFP4's block scales read "100", not "1e+02"
    plot->xAxis->setNumberFormat(QStringLiteral("g"));
    plot->xAxis->setNumberPrecision(3);
    plot->xAxis->setRange(h.edges.front(), h.edges.back());
    plot->yAxis->setRange(0.0, 1.05 * double(*std::max_element(h.counts.begin(), h.counts.end())));
}

// Empties the plot under its title; its axes stay hidden until data is drawn (a plot with nothing
// to show, as "No g_idx", is its title alone rather than empty axes from 0 to 5).
void resetPlot(PlotView* plot, const QString& title, bool withData = false) {
    plot->clearPlottables();
    plot->clearItems();
    plot->setTitle(title);
    for (QCPAxis* axis : {plot->xAxis, plot->yAxis}) {
        axis->setVisible(withData);
        axis->grid()->setVisible(withData);
    }
}

PlotView* makePlot(QWidget* parent, const QString& fileName, const QString& xLabel, const QString& yLabel) {
    auto* plot = new PlotView(parent);
    plot->setDefaultFileName(fileName);
    plot->xAxis->setLabel(xLabel);
    plot->yAxis->setLabel(yLabel);
    plot->setMinimumSize(150, 130);          // three abreast in a laptop's centre, the docks beside them
    plot->xAxis->ticker()->setTickCount(3);  // a third of a laptop's centre: three short labels fit
    // Readable steps (0.005, not 0.0045): "0.0135" beside "0.009" overlapped in a third of 1366 px.
    plot->xAxis->ticker()->setTickStepStrategy(QCPAxisTicker::tssReadability);
    plot->yAxis->ticker()->setTickCount(4);
    return plot;
}

}  // namespace

QuantizedLinearPage::QuantizedLinearPage(QWidget* parent)
    : InspectorPage(parent),
      codes_(makePlot(this, QStringLiteral("code_usage"), tr("code's value"), tr("weights"))),
      scales_(makePlot(this, QStringLiteral("scales"), tr("scale"), tr("groups"))),
      zeros_(makePlot(this, QStringLiteral("zeros"), tr("zero point"), tr("groups"))),
      gIdx_(makePlot(this, QStringLiteral("g_idx"), tr("input column"), tr("group"))),
      error_(makePlot(this, QStringLiteral("rounding_error"), tr("decoded − original"), tr("weights"))),
      caption_(new QLabel(this)) {
    caption_->setWordWrap(true);
    caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* grid = new QGridLayout;
    grid->addWidget(codes_, 0, 0);
    grid->addWidget(scales_, 0, 1);
    grid->addWidget(zeros_, 0, 2);
    grid->addWidget(gIdx_, 1, 0);
    grid->addWidget(error_, 1, 1, 1, 2);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(grid, 1);
    layout->addWidget(caption_);
    codes_->setToolTipProvider([this](double x, double) {
        if (!views_ || views_->usage.empty()) return QString();
        const long i = std::lround(x);
        if (i < 0 || i >= static_cast<long>(views_->usage.size())) return QString();
        const quant::CodeLevel& l = views_->usage[static_cast<std::size_t>(i)];
        return tr("code %1 = %2: %3 weights").arg(l.code).arg(valueText(l.level)).arg(l.count);
    });
    for (PlotView* plot : {codes_, scales_, zeros_, gIdx_, error_})
        connect(plot, &PlotView::exportFailed, this,
                [this](const QString& m) { emit errorOccurred(tr("Export failed"), m); });
    connect(&runner_, &JobRunner::busyChanged, this, &InspectorPage::busyChanged);
    clear(tr("Open a quantized checkpoint and select one of its linears."));
}

void QuantizedLinearPage::setCheckpoint(CheckpointPtr checkpoint) {
    checkpoint_ = std::move(checkpoint);
    hasQuantizedLinears_ = false;
    if (checkpoint_) {
        try {
            const formats::FormatInfo format = formats::detect(*checkpoint_);  // configs and headers
            hasQuantizedLinears_ = std::any_of(format.layers.begin(), format.layers.end(),
                                               [](const formats::LayerQuantInfo& l) { return l.scheme != "dense"; });
        } catch (const Error&) {
            hasQuantizedLinears_ = false;  // the Summary reports an unreadable format
        }
    }
    original_.reset();  // the original of the checkpoint before is not this one's
    originalPath_.clear();
    tensor_.clear();
    runner_.cancel();
    clear(tr("Select a quantized linear (or any of its parts)."));
}

void QuantizedLinearPage::setTensor(const QString& name) {
    tensor_ = name;
    refresh();
}

bool QuantizedLinearPage::setOriginal(const QString& path) {
    if (!checkpoint_) return false;
    try {
        auto original = std::make_shared<const io::Checkpoint>(io::Checkpoint::open(path.toStdString()));
        formats::checkOriginal(formats::detect(*checkpoint_), *checkpoint_, *original);
        original_ = std::move(original);
        originalPath_ = path;
    } catch (const Error& e) {
        emit errorOccurred(tr("Not the original of this checkpoint"), QString::fromUtf8(e.what()));
        return false;
    }
    refresh();
    return true;
}

bool QuantizedLinearPage::isBusy() const { return runner_.isBusy() || (stale_ && isVisible()); }

void QuantizedLinearPage::showEvent(QShowEvent* event) {
    InspectorPage::showEvent(event);
    if (stale_) refresh();
}

void QuantizedLinearPage::refresh() {
    if (!checkpoint_ || tensor_.isEmpty()) return;
    if (!isVisible()) {
        stale_ = true;
        return;
    }
    stale_ = false;
    caption_->setText(tr("Decoding the linear of %1…").arg(tensor_));
    runner_.start([checkpoint = checkpoint_, original = original_, name = tensor_.toStdString()](
                      const qs::CancelToken& token) { return computeViews(*checkpoint, original.get(), name, token); },
                  [this](std::optional<Views> views) { show(std::move(views)); },
                  [this](const QString& message) {
                      clear(message);
                      emit errorOccurred(tr("Decoding failed"), message);
                  });
}

void QuantizedLinearPage::clear(const QString& message) {
    views_.reset();
    message_ = message;
    for (PlotView* plot : {codes_, scales_, zeros_, gIdx_, error_}) {
        resetPlot(plot, QString());
        plot->replot();
    }
    caption_->setText(captionText());
}

void QuantizedLinearPage::show(std::optional<Views> views) {
    if (!views) {
        clear(
            tr("%1 is not part of a quantized linear: select a quantized module of the tree (its codes, scales, zeros "
               "and g_idx beneath it).")
                .arg(tensor_));
        return;
    }
    views_ = std::move(views);
    message_.clear();
    drawCodes();
    resetPlot(scales_, views_->usage.empty() ? tr("No scales to list") : tr("Scales per group"),
              !views_->usage.empty());
    if (!views_->usage.empty()) drawHistogram(scales_, views_->scales, kBarColor);
    scales_->replot();
    resetPlot(zeros_, views_->zeros ? tr("Zero points per group") : tr("No zero points"), views_->zeros.has_value());
    if (views_->zeros) drawHistogram(zeros_, *views_->zeros, kBarColor);
    zeros_->replot();
    drawGIdx();
    resetPlot(error_,
              views_->error ? tr("Rounding error: RMS %1").arg(valueText(views_->errorRms))
                            : tr("Rounding error: no original"),
              views_->error.has_value());
    if (views_->error) drawHistogram(error_, *views_->error, kBarColor);
    error_->replot();
    caption_->setText(captionText());
}

// One bar per code, in increasing value; the codes never used in grey at the axis, so that a layer
// using 6 of its 16 levels shows ten gaps.
void QuantizedLinearPage::drawCodes() {
    const auto& usage = views_->usage;
    // The reason a format has no codes to count (GGUF blocks, the trellis) is the caption's: too long for a title.
    resetPlot(codes_,
              usage.empty() ? tr("No per-weight codes")
                            : tr("Codes used: %1 of %2").arg(quant::codesUsed(usage)).arg(usage.size()),
              !usage.empty());
    if (usage.empty()) return codes_->replot();
    auto* bars = new QCPBars(codes_->xAxis, codes_->yAxis);
    bars->setName(tr("weights per code"));
    bars->setPen(Qt::NoPen);
    bars->setBrush(kBarColor);
    bars->setWidth(0.8);
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    // Four labels for 16 codes, eight (turned) for E4M3's 256: what a third of a laptop's centre fits.
    const int every = usage.size() <= 16 ? 4 : static_cast<int>(usage.size()) / 8;
    std::uint64_t most = 1;
    for (std::size_t i = 0; i < usage.size(); ++i) {
        bars->addData(double(i), double(usage[i].count));
        most = std::max(most, usage[i].count);
        if (static_cast<int>(i) % every == 0)
            ticker->addTick(double(i), QString::number(double(usage[i].level), 'g', 2));
    }
    codes_->xAxis->setTicker(ticker);
    codes_->xAxis->setTickLabelRotation(usage.size() > 16 ? 60 : 0);
    codes_->xAxis->setRange(-0.6, double(usage.size()) - 0.4);
    codes_->yAxis->setRange(0.0, 1.05 * double(most));
    codes_->replot();
}

// The group each input column reads its scale from: a staircase without act-order (never drawn), a
// scatter when GPTQ quantized the columns by decreasing Hessian diagonal.
void QuantizedLinearPage::drawGIdx() {
    const auto& g = views_->gIdx;
    // GPTQ exports store a g_idx even without act-order: then column c reads group c / group size.
    const QString title = !g.empty()           ? tr("g_idx (act-order)")
                          : views_->storesGIdx ? tr("g_idx: column order")
                                               : tr("No g_idx (no act-order)");
    resetPlot(gIdx_, title, !g.empty());
    if (!g.empty()) {
        auto* graph = gIdx_->addGraph();
        graph->setName(QStringLiteral("g_idx"));
        graph->setLineStyle(QCPGraph::lsNone);
        graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, kBarColor, 3));
        QVector<double> x(static_cast<int>(g.size())), y(static_cast<int>(g.size()));
        for (std::size_t c = 0; c < g.size(); ++c) {
            x[static_cast<int>(c)] = double(c);
            y[static_cast<int>(c)] = double(g[c]);
        }
        graph->setData(x, y, true);
        gIdx_->xAxis->ticker()->setTickCount(3);
        gIdx_->xAxis->setRange(-0.5, double(g.size()) - 0.5);
        gIdx_->yAxis->setRange(-0.5, double(*std::max_element(g.begin(), g.end())) + 0.5);
    }
    gIdx_->replot();
}

QString QuantizedLinearPage::captionText() const {
    if (!views_) return message_;
    const Views& v = *views_;
    QString text = tr("%1: %2.").arg(v.linear, v.scheme);
    if (!v.usage.empty())
        text += QLatin1Char(' ') + v.scaleNote;
    else
        text += QLatin1Char(' ') + v.usageNote;
    if (v.error)
        text += tr(" Against %1: RMS error %2, %3% of the weights' RMS %4.")
                    .arg(originalPath_, valueText(v.errorRms))
                    .arg(v.originalRms > 0.0 ? 100.0 * v.errorRms / v.originalRms : 0.0, 0, 'f', 2)
                    .arg(valueText(v.originalRms));
    else if (!v.errorProblem.isEmpty())
        text += tr(" Not compared with the original: %1").arg(v.errorProblem);
    else
        text +=
            tr(" File ▸ Compare with Original… names the checkpoint it was quantized from, for the rounding error.");
    return text;
}

}  // namespace qs::gui
