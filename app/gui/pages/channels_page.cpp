#include "pages/channels_page.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include "qs/error.h"
#include "qs/model/rotated_linear.h"

#include "models/channel_table_model.h"
#include "pages/quantized_codes.h"
#include "plots/plot_view.h"
#include "text/number_format.h"

namespace qs::gui {
namespace {

const QColor kChannelColor(70, 130, 180);
const QColor kTopColor(214, 69, 65);
const QColor kMarkerColor(240, 150, 20);
const QColor kRotatedColor(60, 160, 90);

// What the runner hands back: the tensor's statistics, the scheme its codes were decoded from, and with
// "After --rotate" the rotated linear's statistics or why there are none.
struct ChannelResult {
    analysis::ChannelStats stats;
    QString decodedAs;
    std::optional<analysis::ChannelStats> rotated;
    QString rotationNote;
};

analysis::ChannelStats statsOf(const MatrixF& w, const analysis::ChannelStatsOptions& options) {
    return analysis::computeChannelStats(std::span<const float>(w.data(), static_cast<std::size_t>(w.size())), w.rows(),
                                         w.cols(), options);
}

}  // namespace

ChannelsPage::ChannelsPage(QWidget* parent)
    : InspectorPage(parent),
      axis_(new QComboBox(this)),
      topK_(new QSpinBox(this)),
      rotated_(new QCheckBox(tr("After --rotate"), this)),
      plot_(new PlotView(this)),
      table_(new ChannelTableModel(this)),
      tableView_(new QTableView(this)),
      caption_(new QLabel(this)) {
    axis_->addItem(tr("Input channels (columns)"), int(analysis::ChannelAxis::Input));
    axis_->addItem(tr("Output rows"), int(analysis::ChannelAxis::Output));
    topK_->setRange(1, 1024);
    topK_->setValue(16);
    topK_->setKeyboardTracking(false);
    caption_->setWordWrap(true);
    caption_->setTextFormat(Qt::RichText);

    tableView_->setModel(table_);
    tableView_->setSelectionBehavior(QAbstractItemView::SelectRows);
    tableView_->setSelectionMode(QAbstractItemView::SingleSelection);
    tableView_->verticalHeader()->hide();
    tableView_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    tableView_->horizontalHeader()->setStretchLastSection(true);
    // The table is as wide as its four columns (fitTableWidth): a table that scrolls sideways hides
    // the ratio to the median, the column the ranking is read by; the plot gives way instead.
    tableView_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);

    auto* exportButton = new QToolButton(this);
    exportButton->setText(tr("Export"));
    exportButton->setPopupMode(QToolButton::InstantPopup);
    exportButton->setMenu(plot_->exportMenu());

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Per:"), this));
    controls->addWidget(axis_);
    controls->addSpacing(12);
    controls->addWidget(new QLabel(tr("Top k:"), this));
    controls->addWidget(topK_);
    controls->addSpacing(12);
    controls->addWidget(rotated_);
    controls->addStretch(1);
    controls->addWidget(exportButton);
    // The table's minimum is every column whole (fitTableWidth); beside it the plot may be narrower than
    // a PlotView's default, so that the page's minimum stays below the centre's width at 1366 pixels and
    // choosing this tab does not push the docks narrower.
    plot_->setMinimumWidth(220);
    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(plot_);
    splitter->addWidget(tableView_);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({620, 340});
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(controls);
    layout->addWidget(splitter, 1);
    layout->addWidget(caption_);

    plot_->setTitle(QString());
    plot_->yAxis->setLabel(tr("max |w|"));
    plot_->setDefaultFileName(QStringLiteral("channels"));
    plot_->setToolTipProvider([this](double x, double) { return toolTipAt(x); });
    plot_->setCsvProvider([this] { return csv(); });

    connect(axis_, &QComboBox::currentIndexChanged, this, &ChannelsPage::draw);
    connect(topK_, &QSpinBox::valueChanged, this, &ChannelsPage::refresh);
    rotated_->setObjectName(QStringLiteral("afterRotate"));
    rotated_->setToolTip(
        tr("Also plot the same linear as --rotate quantizes it: its norm's weight folded in and its inputs turned "
           "by the rotation of seed 0 (green). A rotation spreads an outlier channel over all of them."));
    connect(rotated_, &QCheckBox::toggled, this, &ChannelsPage::refresh);
    connect(tableView_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) { markChannel(current); });
    connect(plot_, &PlotView::resetViewRequested, this, &ChannelsPage::resetView);
    connect(plot_, &PlotView::exportFailed, this,
            [this](const QString& m) { emit errorOccurred(tr("Export failed"), m); });
    connect(&runner_, &JobRunner::busyChanged, this, &InspectorPage::busyChanged);
    clearPlot(tr("Open a checkpoint and select a tensor."));
}

void ChannelsPage::setCheckpoint(CheckpointPtr checkpoint) {
    checkpoint_ = std::move(checkpoint);
    tensor_.clear();
    runner_.cancel();
    clearPlot(tr("Select a tensor."));
}

void ChannelsPage::setTensor(const QString& name) {
    tensor_ = name;
    refresh();
}

void ChannelsPage::setAxis(analysis::ChannelAxis axis) { axis_->setCurrentIndex(axis_->findData(int(axis))); }

analysis::ChannelAxis ChannelsPage::axis() const {
    return static_cast<analysis::ChannelAxis>(axis_->currentData().toInt());
}

void ChannelsPage::setTopK(int k) { topK_->setValue(k); }

void ChannelsPage::setShowRotated(bool on) { rotated_->setChecked(on); }

QString ChannelsPage::captionText() const { return caption_->text(); }

bool ChannelsPage::isBusy() const { return runner_.isBusy() || (stale_ && isVisible()); }

void ChannelsPage::showEvent(QShowEvent* event) {
    InspectorPage::showEvent(event);
    if (stale_) refresh();
}

void ChannelsPage::refresh() {
    if (!checkpoint_ || tensor_.isEmpty()) return;
    if (!isVisible()) {
        stale_ = true;
        return;
    }
    stale_ = false;
    caption_->setText(tr("Computing channel statistics of %1…").arg(tensor_.toHtmlEscaped()));
    runner_.start(
        [checkpoint = checkpoint_, name = tensor_.toStdString(), k = topK_->value(),
         rotated = rotated_->isChecked()](const qs::CancelToken& token) {
            analysis::ChannelStatsOptions options;
            options.topK = k;
            options.cancel = token;
            ChannelResult result;
            // A quantized linear's packed codes (a GPTQ qweight is [in/8, out] int32) are its decoded
            // weights' channels, [out, in] as for a dense linear.
            if (auto decoded = decodeCodes(*checkpoint, name)) {
                result.stats = statsOf(decoded->weight, options);
                result.decodedAs = QString::fromStdString(decoded->scheme);
            } else {
                result.stats = analysis::computeChannelStats(checkpoint->tensor(name), options);
            }
            if (rotated) {
                try {
                    result.rotated = statsOf(model::rotatedLinearWeight(*checkpoint, name, 0), options);
                } catch (const Error& e) {
                    result.rotationNote = QString::fromStdString(e.what());
                }
            }
            return result;
        },
        [this, tensor = tensor_](ChannelResult r) {
            shownTensor_ = tensor;
            stats_ = std::move(r.stats);
            decodedAs_ = std::move(r.decodedAs);
            rotatedStats_ = std::move(r.rotated);
            rotationNote_ = std::move(r.rotationNote);
            draw();
        },
        [this](const QString& message) {
            clearPlot(message.toHtmlEscaped());
            emit errorOccurred(tr("Channel statistics failed"), message);
        });
}

void ChannelsPage::clearPlot(const QString& message) {
    decodedAs_.clear();
    stats_.reset();
    rotatedStats_.reset();
    rotationNote_.clear();
    shownTensor_.clear();
    plot_->clearGraphs();
    plot_->clearItems();
    marker_ = nullptr;
    plot_->setTitle(QString());
    table_->setRanks({}, tr("channel"));
    caption_->setText(message);
    plot_->replot();
}

const std::vector<float>& ChannelsPage::values() const { return stats_->maxAbs(axis()); }

void ChannelsPage::draw() {
    if (!stats_) return;
    const bool input = axis() == analysis::ChannelAxis::Input;
    const std::vector<float>& v = values();
    const auto& top = stats_->top(axis());
    plot_->clearGraphs();
    plot_->clearItems();

    auto* all = plot_->addGraph();
    all->setLineStyle(QCPGraph::lsImpulse);
    all->setPen(QPen(kChannelColor, 1.0));
    QVector<double> keys(static_cast<qsizetype>(v.size())), heights(static_cast<qsizetype>(v.size()));
    for (std::size_t i = 0; i < v.size(); ++i) {
        keys[static_cast<qsizetype>(i)] = static_cast<double>(i);
        heights[static_cast<qsizetype>(i)] = v[i];
    }
    all->setData(keys, heights, true);
    if (rotatedStats_) {  // the rotated linear's maxima, drawn over the stored ones' as points
        const std::vector<float>& r = rotatedStats_->maxAbs(axis());
        auto* rotated = plot_->addGraph();
        rotated->setLineStyle(QCPGraph::lsNone);
        rotated->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, kRotatedColor, kRotatedColor, 3));
        for (std::size_t i = 0; i < r.size(); ++i) rotated->addData(static_cast<double>(i), r[i]);
    }

    auto* highlighted = plot_->addGraph();
    highlighted->setLineStyle(QCPGraph::lsNone);
    highlighted->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, kTopColor, kTopColor, 6));
    for (const analysis::ChannelRank& r : top) highlighted->addData(static_cast<double>(r.channel), r.maxAbs);

    marker_ = new QCPItemStraightLine(plot_);
    marker_->setPen(QPen(kMarkerColor, 1.5, Qt::DashLine));
    marker_->setVisible(false);

    const QString channelWord = input ? tr("input channel") : tr("output row");
    // The axes say what is plotted and the caption how it was read; the title which tensor, its end
    // kept where the plot is narrow ("…self_attn.q_proj.qweight").
    plot_->setTitle(shownTensor_, Qt::ElideLeft);
    plot_->xAxis->setLabel(channelWord);
    table_->setRanks(top, input ? tr("input channel") : tr("output row"));
    fitTableWidth();
    if (!top.empty()) {
        caption_->setText(tr("%1 × %2 weight (output × input). Largest %3: #%4 with max|w| %5, %6× the median %3.")
                              .arg(stats_->rows)
                              .arg(stats_->cols)
                              .arg(channelWord)
                              .arg(top.front().channel)
                              .arg(valueText(top.front().maxAbs))
                              .arg(top.front().ratioToMedian, 0, 'f', 2) +
                          (decodedAs_.isEmpty() ? QString() : tr(" Decoded from %1.").arg(decodedAs_)));
    }
    if (rotatedStats_ && !rotatedStats_->top(axis()).empty()) {
        const analysis::ChannelRank& peak = rotatedStats_->top(axis()).front();
        caption_->setText(caption_->text() + tr(" After --rotate (green): largest #%1 with max|w| %2, %3× the median.")
                                                 .arg(peak.channel)
                                                 .arg(valueText(peak.maxAbs))
                                                 .arg(peak.ratioToMedian, 0, 'f', 2));
    } else if (!rotationNote_.isEmpty()) {
        caption_->setText(caption_->text() + tr(" Not shown after --rotate: %1").arg(rotationNote_.toHtmlEscaped()));
    }
    resetView();
}

void ChannelsPage::resetView() {
    if (!stats_) return;
    const std::vector<float>& v = values();
    float peak = v.empty() ? 1.0f : *std::max_element(v.begin(), v.end());
    if (rotatedStats_)
        for (float r : rotatedStats_->maxAbs(axis())) peak = std::max(peak, r);
    plot_->xAxis->setRange(-0.5, std::max<double>(static_cast<double>(v.size()) - 0.5, 0.5));
    plot_->yAxis->setRange(0.0, peak > 0 ? peak * 1.08 : 1.0);
    plot_->replot();
}

void ChannelsPage::markChannel(const QModelIndex& row) {
    if (!marker_ || !row.isValid()) return;
    const double channel = table_->data(row, ChannelTableModel::ChannelRole).toDouble();
    marker_->point1->setCoords(channel, 0);
    marker_->point2->setCoords(channel, 1);
    marker_->setVisible(true);
    plot_->replot();
}

QString ChannelsPage::toolTipAt(double x) const {
    if (!stats_) return {};
    const std::vector<float>& v = values();
    const long long channel = std::llround(x);
    if (channel < 0 || channel >= static_cast<long long>(v.size())) return {};
    return tr("%1 %2: max|w| = %3")
        .arg(axis() == analysis::ChannelAxis::Input ? tr("input channel") : tr("output row"))
        .arg(channel)
        .arg(valueText(v[static_cast<std::size_t>(channel)]));
}

void ChannelsPage::fitTableWidth() {
    // The columns' own widths: the last one not stretched while measured.
    QHeaderView* header = tableView_->horizontalHeader();
    header->setStretchLastSection(false);
    tableView_->resizeColumnsToContents();
    const int columns = header->length();
    header->setStretchLastSection(true);
    tableView_->setMinimumWidth(columns + 2 * tableView_->frameWidth() +
                                tableView_->verticalScrollBar()->sizeHint().width());
}

CsvTable ChannelsPage::csv() const {
    CsvTable table;
    table.header = {
        axis() == analysis::ChannelAxis::Input ? QStringLiteral("input_channel") : QStringLiteral("output_row"),
        QStringLiteral("max_abs")};
    if (!stats_) return table;
    const std::vector<float>& v = values();
    for (std::size_t i = 0; i < v.size(); ++i) {
        table.rows.append({QString::number(i), QString::number(v[i], 'g', 9)});
    }
    return table;
}

}  // namespace qs::gui
