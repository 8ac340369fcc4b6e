#include "pages/quantized_linear_page.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <string>

#include <QGridLayout>
#include <QLabel>
#include <QStringList>
#include <QVBoxLayout>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/linear_reader.h"
#include "qs/formats/rounding_error.h"
#include "qs/io/ggml_block_fields.h"

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

// "one per weight", "one per 32 weights".
QString perWeights(int weights) {
    return weights == 1 ? QObject::tr("one per weight") : QObject::tr("one per %1 weights").arg(weights);
}

// The fields grouped by the weights one value serves, in their order: "4-bit codes, one per weight;
// 6-bit sub-block scales and 6-bit sub-block mins, one per 32 weights; f16 d and f16 dmin, one per 256
// weights".
QString fieldsText(const io::GgmlBlockFields& blocks) {
    QStringList groups;
    QStringList names;
    int per = 0;
    const auto close = [&] {
        if (!names.isEmpty()) groups << names.join(QObject::tr(" and ")) + QStringLiteral(", ") + perWeights(per);
        names.clear();
    };
    for (const io::GgmlField& f : blocks.fields) {
        if (f.weightsPerValue != per) close();
        per = f.weightsPerValue;
        names << QString::fromStdString(f.what);
    }
    close();
    return groups.join(QStringLiteral("; "));
}

// A plot of one field, titled briefly ("Scales per 32"; "d per 32 (f16)" for a legacy block's scale):
// the caption names the fields in full.
QuantizedLinearPage::FieldPlot fieldPlot(const io::GgmlField* field, const QString& name, const QString& floatName) {
    QuantizedLinearPage::FieldPlot plot;
    if (!field) return plot;
    if (field->isInteger()) {
        plot.title = QObject::tr("%1 per %2").arg(name).arg(field->weightsPerValue);
        plot.levels = quant::fieldUsage(*field);
        // MXFP4's E8M0 scales are powers of two: the bars say their exponents.
        plot.xLabel = field->what.starts_with("E8M0") ? QObject::tr("power of two") : name.toLower();
    } else {
        plot.title = QObject::tr("%1 per %2 (f16)").arg(floatName).arg(field->weightsPerValue);
        plot.values = analysis::computeHistogram(std::span<const float>(field->values));
        plot.xLabel = floatName;
    }
    return plot;
}

// The share of an IQ type's two-valued fields at their second value (a negated codebook value; a shift
// of -1/8): one sentence of the caption, empty for the other types.
QString signsNote(const io::GgmlBlockFields& blocks) {
    const auto share = [](const io::GgmlField& f) {
        const auto counts = f.usage();
        return f.size() > 0 ? 100.0 * double(counts[1]) / double(f.size()) : 0.0;
    };
    if (const io::GgmlField* signs = blocks.find(io::GgmlFieldRole::Signs))
        return QObject::tr("%1% of the codebook values are negated by their sign bits.").arg(share(*signs), 0, 'f', 1);
    if (const io::GgmlField* deltas = blocks.find(io::GgmlFieldRole::Deltas))
        return QObject::tr("%1% of the groups shift their codebook values by −1/8, the rest by +1/8.")
            .arg(share(*deltas), 0, 'f', 1);
    return {};
}

// A GGUF linear's weight tensor [rows, cols], field by field (counted a slice of rows at a time: a
// value per weight of a large tensor would take gigabytes); `usage` gets its codes (or codebook entries).
QuantizedLinearPage::GgmlBlocks ggmlBlocks(const io::TensorView& weight, std::vector<quant::CodeLevel>& usage,
                                           const qs::CancelToken& token) {
    const io::GgmlTypeTraits& traits = io::ggmlTypeTraits(*weight.info().ggmlType);
    const std::span<const std::byte> bytes = weight.bytes();
    const io::GgmlBlockFields blocks =
        io::ggmlBlockFieldCounts(traits.type, {reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()},
                                 weight.shape()[0], weight.shape()[1], token);
    QuantizedLinearPage::GgmlBlocks g;
    g.type = QString::fromUtf8(traits.name.data(), static_cast<int>(traits.name.size()));
    g.blockBytes = traits.blockBytes;
    g.blockWeights = traits.blockElements;
    g.bitsPerWeight = traits.bitsPerWeight();
    g.fields = fieldsText(blocks);
    const io::GgmlField* codes = blocks.find(io::GgmlFieldRole::Codes);
    if (!codes) codes = blocks.find(io::GgmlFieldRole::GridIndices);
    usage = quant::fieldUsage(*codes);
    g.weightsPerCode = codes->weightsPerValue;
    g.scales = fieldPlot(blocks.find(io::GgmlFieldRole::Scales), QObject::tr("Scales"), QStringLiteral("d"));
    g.mins = fieldPlot(blocks.find(io::GgmlFieldRole::Mins), QObject::tr("Mins"), QStringLiteral("m"));
    if (const io::GgmlField* d = blocks.find(io::GgmlFieldRole::SuperScale))
        g.d = analysis::computeHistogram(std::span<const float>(d->values));
    if (const io::GgmlField* dmin = blocks.find(io::GgmlFieldRole::SuperMin))
        g.dmin = analysis::computeHistogram(std::span<const float>(dmin->values));
    g.signsNote = signsNote(blocks);
    return g;
}

// The parts of a linear of the other formats, decoded: codes, scales and zeros, g_idx.
void addDecodedParts(const formats::LinearReader& reader, const formats::LayerQuantInfo& layer,
                     QuantizedLinearPage::Views& v, const qs::CancelToken& token) {
    const formats::DecodedLinear decoded = reader.decode(layer.ref);
    token.throwIfCancelled();
    const quant::QuantizedLinear& parts = decoded.parts;
    const bool perWeightCodes =
        parts.codeKind != quant::CodeKind::Trellis && parts.codeKind != quant::CodeKind::GgmlBlocks;
    if (decoded.partsExact && perWeightCodes) {
        v.usage = quant::codeUsage(parts);
        v.scales = analysis::computeHistogram(valuesOf(parts.scales));
        v.scaleNote = scaleNote(layer, parts);
        if (parts.codeKind == quant::CodeKind::UnsignedInt && parts.zeros.size() > 0)
            v.zeros = analysis::computeHistogram(valuesOf(parts.zeros));
    } else {
        v.usageNote = QObject::tr("%1 stores no code per weight that could be counted here.").arg(v.scheme);
    }
    if (layer.actOrder) v.gIdx = parts.gIdx;
}

// On the worker: everything the page draws for the linear `tensor` belongs to; nullopt for a tensor of
// no quantized linear.
std::optional<QuantizedLinearPage::Views> computeViews(const io::Checkpoint& checkpoint, const io::Checkpoint* original,
                                                       const std::string& tensor, const qs::CancelToken& token) {
    const formats::FormatInfo format = formats::detect(checkpoint);  // configs and headers only
    const auto layer = linearOfPart(format, tensor);
    if (!layer) return std::nullopt;
    const formats::LinearReader reader(checkpoint, format);
    QuantizedLinearPage::Views v;
    v.linear = QString::fromStdString(layer->ref.prefix);
    v.scheme = QString::fromStdString(layer->summary());
    const io::CheckpointTensor* ggufWeight =
        layer->codec == "gguf" ? checkpoint.find(layer->ref.prefix + ".weight") : nullptr;
    if (ggufWeight && ggufWeight->info->ggmlType && io::ggmlHasBlockFields(*ggufWeight->info->ggmlType)) {
        v.ggml = ggmlBlocks(checkpoint.view(*ggufWeight), v.usage, token);  // the blocks' own fields, not a decode
    } else {
        addDecodedParts(reader, *layer, v, token);
    }
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

// A bar label: integers as they are ("1792", not "1.8e+03"), other levels in two digits ("0.5", "0.0039").
QString levelText(float level) {
    return level == std::round(level) ? QString::number(double(level), 'f', 0) : QString::number(double(level), 'g', 2);
}

// One bar per stored integer, in increasing level, with `labels` labels on the axis (more than four
// turned). `trim`: only from the first used to the last (a field of 256 levels, as Q6_K's int8 scales,
// uses a few dozen of them).
void drawLevelBars(PlotView* plot, const std::vector<quant::CodeLevel>& all, bool trim, int labels) {
    std::size_t first = 0, last = all.size();
    if (trim) {
        while (first < all.size() && all[first].count == 0) ++first;
        while (last > first && all[last - 1].count == 0) --last;
    }
    const std::vector<quant::CodeLevel> usage(all.begin() + static_cast<std::ptrdiff_t>(first),
                                              all.begin() + static_cast<std::ptrdiff_t>(last));
    auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
    bars->setPen(Qt::NoPen);
    bars->setBrush(kBarColor);
    bars->setWidth(0.8);
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    const int every = std::max(1, (static_cast<int>(usage.size()) + labels - 1) / labels);
    std::uint64_t most = 1;
    for (std::size_t i = 0; i < usage.size(); ++i) {
        bars->addData(double(i), double(usage[i].count));
        most = std::max(most, usage[i].count);
        if (static_cast<int>(i) % every == 0) ticker->addTick(double(i), levelText(usage[i].level));
    }
    plot->xAxis->setTicker(ticker);
    plot->xAxis->setTickLabelRotation(labels > 4 ? 60 : 0);
    plot->xAxis->setRange(-0.6, double(usage.size()) - 0.4);
    plot->yAxis->setRange(0.0, 1.05 * double(most));
}

// A histogram of F16 super-block scales: small numbers with long labels ("0.00015"). Asked for three
// ticks, the axis of a d in [0, 0.003] took seven ("0.0005" steps) that overlapped in a third of
// 1366 px; two suffice there. A d of either sign (IQ4_XS) keeps three: "−2.5e-05 0 2.5e-05".
void drawSuperScales(PlotView* plot, const analysis::Histogram& h) {
    plot->xAxis->ticker()->setTickCount(h.edges.front() < 0.0 && h.edges.back() > 0.0 ? 3 : 2);
    drawHistogram(plot, h, kBarColor);
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
      superMins_(makePlot(this, QStringLiteral("dmin"), tr("value"), tr("super-blocks"))),
      caption_(new QLabel(this)) {
    caption_->setWordWrap(true);
    caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    grid_ = new QGridLayout;
    grid_->addWidget(codes_, 0, 0);
    grid_->addWidget(scales_, 0, 1);
    grid_->addWidget(zeros_, 0, 2);
    grid_->addWidget(gIdx_, 1, 0);
    for (int column = 0; column < 3; ++column) grid_->setColumnStretch(column, 1);  // thirds, whatever is drawn
    showSuperMins(false);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(grid_, 1);
    layout->addWidget(caption_);
    codes_->setToolTipProvider([this](double x, double) {
        if (!views_ || views_->usage.empty()) return QString();
        const long i = std::lround(x);
        if (i < 0 || i >= static_cast<long>(views_->usage.size())) return QString();
        const quant::CodeLevel& l = views_->usage[static_cast<std::size_t>(i)];
        if (views_->ggml && views_->ggml->weightsPerCode > 1)
            return tr("codebook entry %1: %2 groups of %3 weights")
                .arg(l.code)
                .arg(l.count)
                .arg(views_->ggml->weightsPerCode);
        return tr("code %1 = %2: %3 weights").arg(l.code).arg(valueText(l.level)).arg(l.count);
    });
    for (PlotView* plot : {codes_, scales_, zeros_, gIdx_, error_, superMins_})
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
    showSuperMins(false);
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
    showSuperMins(views_->ggml && views_->ggml->dmin);
    if (views_->ggml) {
        drawGgml();
    } else {
        restoreAxes();
        drawParts();
    }
    // Beside dmin the plot has a third of the width: a title that fits it.
    const bool narrow = !superMins_->isHidden();
    const QString title =
        views_->error ? (narrow ? tr("Error RMS %1") : tr("Rounding error: RMS %1")).arg(valueText(views_->errorRms))
        : narrow      ? tr("No original")
                      : tr("Rounding error: no original");
    resetPlot(error_, title, views_->error.has_value());
    error_->xAxis->ticker()->setTickCount(narrow ? 2 : 3);  // "-0.01 -0.005 0 0.005" overlapped in a third
    if (views_->error) drawHistogram(error_, *views_->error, kBarColor);
    error_->replot();
    caption_->setText(captionText());
}

// A GGUF linear with a dmin shows it beside d, in the first half of the rounding error's place.
void QuantizedLinearPage::showSuperMins(bool shown) {
    grid_->removeWidget(error_);
    grid_->removeWidget(superMins_);
    superMins_->setVisible(shown);
    if (shown) {
        grid_->addWidget(superMins_, 1, 1);
        grid_->addWidget(error_, 1, 2);
    } else {
        grid_->addWidget(error_, 1, 1, 1, 2);
    }
}

// The axes' own labels and numeric tickers, after a GGUF linear relabelled them.
void QuantizedLinearPage::restoreAxes() {
    const std::pair<PlotView*, std::pair<QString, QString>> labels[] = {
        {scales_, {tr("scale"), tr("groups")}},
        {zeros_, {tr("zero point"), tr("groups")}},
        {gIdx_, {tr("input column"), tr("group")}},
    };
    for (const auto& [plot, axes] : labels) {
        plot->xAxis->setLabel(axes.first);
        plot->yAxis->setLabel(axes.second);
        plot->xAxis->setTickLabelRotation(0);
        if (plot->xAxis->ticker().dynamicCast<QCPAxisTickerText>()) {
            plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
            plot->xAxis->ticker()->setTickCount(3);
            plot->xAxis->ticker()->setTickStepStrategy(QCPAxisTicker::tssReadability);
        }
    }
}

// A stored field of a GGUF linear's blocks: bars per stored integer, or its values' histogram.
void QuantizedLinearPage::drawField(PlotView* plot, const FieldPlot& field, const QString& none,
                                    const QString& countLabel) {
    resetPlot(plot, field.empty() ? none : field.title, !field.empty());
    plot->yAxis->setLabel(countLabel);
    plot->xAxis->setLabel(field.xLabel);
    if (!field.levels.empty()) {
        drawLevelBars(plot, field.levels, true, 4);
    } else if (field.values) {
        plot->xAxis->setTickLabelRotation(0);
        if (plot->xAxis->ticker().dynamicCast<QCPAxisTickerText>())
            plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        plot->xAxis->ticker()->setTickCount(3);
        plot->xAxis->ticker()->setTickStepStrategy(QCPAxisTicker::tssReadability);
        drawHistogram(plot, *field.values, kBarColor);
    }
    plot->replot();
}

// A GGUF linear: its sub-block scales, mins and super-block d / dmin in the scales, zeros and g_idx plots.
void QuantizedLinearPage::drawGgml() {
    const GgmlBlocks& g = *views_->ggml;
    const bool superBlock = g.d.has_value();
    const QString counted = superBlock ? tr("sub-blocks") : tr("blocks");
    drawField(scales_, g.scales, tr("No scales"), counted);
    drawField(zeros_, g.mins, tr("No mins (symmetric)"), counted);
    resetPlot(gIdx_, superBlock ? tr("d per %1 (f16)").arg(g.blockWeights) : tr("No super-block scale"), superBlock);
    gIdx_->xAxis->setLabel(QStringLiteral("d"));
    gIdx_->yAxis->setLabel(tr("super-blocks"));
    if (superBlock) drawSuperScales(gIdx_, *g.d);
    gIdx_->replot();
    resetPlot(superMins_, tr("dmin per %1 (f16)").arg(g.blockWeights), g.dmin.has_value());
    superMins_->xAxis->setLabel(QStringLiteral("dmin"));
    if (g.dmin) drawSuperScales(superMins_, *g.dmin);
    superMins_->replot();
}

// The parts of the other formats: scales and zero points per group, g_idx.
void QuantizedLinearPage::drawParts() {
    resetPlot(scales_, views_->usage.empty() ? tr("No scales to list") : tr("Scales per group"),
              !views_->usage.empty());
    if (!views_->usage.empty()) drawHistogram(scales_, views_->scales, kBarColor);
    scales_->replot();
    resetPlot(zeros_, views_->zeros ? tr("Zero points per group") : tr("No zero points"), views_->zeros.has_value());
    if (views_->zeros) drawHistogram(zeros_, *views_->zeros, kBarColor);
    zeros_->replot();
    drawGIdx();
}

// One bar per code, in increasing value, so that a layer using 6 of its 16 levels shows ten gaps. A
// GGUF codebook type counts its codebook entries instead (one per group of 8 or 4 weights).
void QuantizedLinearPage::drawCodes() {
    const auto& usage = views_->usage;
    const bool entries = views_->ggml && views_->ggml->weightsPerCode > 1;
    // The reason a format has no codes to count (the trellis) is the caption's: too long for a title.
    resetPlot(codes_,
              usage.empty() ? tr("No per-weight codes")
              : entries     ? tr("Entries used: %1/%2").arg(quant::codesUsed(usage)).arg(usage.size())
                            : tr("Codes used: %1 of %2").arg(quant::codesUsed(usage)).arg(usage.size()),
              !usage.empty());
    codes_->xAxis->setLabel(entries ? tr("codebook entry") : tr("code's value"));
    codes_->yAxis->setLabel(entries ? tr("groups of %1 weights").arg(views_->ggml->weightsPerCode) : tr("weights"));
    // Four labels for 16 codes or a codebook's entries (integers up to 2047), eight (turned) for E4M3's
    // 256 values: what a third of a laptop's centre fits.
    if (!usage.empty()) drawLevelBars(codes_, usage, false, usage.size() <= 16 || entries ? 4 : 8);
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
    if (v.ggml)
        text += QLatin1Char(' ') +
                tr("%1 stores %2 bits per weight (%3 bytes per %4 weights): %5.")
                    .arg(v.ggml->type)
                    .arg(v.ggml->bitsPerWeight, 0, 'g', 6)
                    .arg(v.ggml->blockBytes)
                    .arg(v.ggml->blockWeights)
                    .arg(v.ggml->fields) +
                (v.ggml->signsNote.isEmpty() ? QString() : QLatin1Char(' ') + v.ggml->signsNote);
    else if (!v.usage.empty())
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
