#include "pages/imatrix_page.h"

#include <algorithm>
#include <numeric>

#include <QLabel>
#include <QSplitter>
#include <QVBoxLayout>

#include "qs/error.h"

#include "plots/importance_map.h"
#include "plots/plot_view.h"
#include "text/number_format.h"

namespace qs::gui {
namespace {

const QColor kColumnColor(70, 130, 180);
constexpr int kListedColumns = 8;  // the caption names the most important columns

// The columns in decreasing importance.
std::vector<std::size_t> byImportance(const std::vector<float>& columns) {
    std::vector<std::size_t> order(columns.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return columns[a] > columns[b]; });
    return order;
}

std::optional<model::ModelConfig> configOf(const io::Checkpoint& checkpoint) {
    try {
        return model::ModelConfig::fromCheckpoint(checkpoint);
    } catch (const Error&) {
        return std::nullopt;  // a checkpoint QuantScope cannot run: the map still shows, without coverage
    }
}

}  // namespace

ImatrixPage::ImatrixPage(QWidget* parent)
    : InspectorPage(parent),
      map_(new ImportanceMap(this)),
      columnsPlot_(new PlotView(this)),
      caption_(new QLabel(this)) {
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(map_);
    split->addWidget(columnsPlot_);
    split->setSizes({420, 520});
    // Small minimums, so that the page never widens the centre at the docks' cost (1366-pixel laptops).
    map_->setMinimumWidth(170);
    columnsPlot_->setMinimumWidth(170);
    caption_->setWordWrap(true);
    caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(split, 1);
    layout->addWidget(caption_);

    columnsPlot_->setTitle(tr("Importance per input column"));
    columnsPlot_->setDefaultFileName(QStringLiteral("imatrix_columns"));
    columnsPlot_->xAxis->setLabel(tr("input column"));
    columnsPlot_->yAxis->setLabel(tr("Σx²/count per column"));
    columnsPlot_->setLogValueAxis();
    columnsPlot_->setToolTipProvider([this](double x, double) { return toolTipAt(x); });
    columnsPlot_->setCsvProvider([this] {
        CsvTable table{{QStringLiteral("column"), QStringLiteral("importance")}, {}};
        for (std::size_t c = 0; c < columns_.size(); ++c)
            table.rows.append({QString::number(c), QString::number(columns_[c], 'g', 9)});
        return table;
    });
    connect(columnsPlot_, &PlotView::resetViewRequested, this, &ImatrixPage::resetColumnsView);
    connect(map_, &ImportanceMap::expertClicked, this, &ImatrixPage::linearActivated);
    for (PlotView* plot : {static_cast<PlotView*>(map_), columnsPlot_})
        connect(plot, &PlotView::exportFailed, this,
                [this](const QString& m) { emit errorOccurred(tr("Export failed"), m); });
    connect(&runner_, &JobRunner::busyChanged, this, &InspectorPage::busyChanged);
    caption_->setText(captionText());
}

void ImatrixPage::setCheckpoint(CheckpointPtr checkpoint) {
    checkpoint_ = std::move(checkpoint);
    config_ = checkpoint_ ? configOf(*checkpoint_) : std::nullopt;
    tensor_.clear();
    updateCoverage();
    showColumns();
}

void ImatrixPage::openImatrix(const QString& path) {
    struct Loaded {
        std::shared_ptr<const pipeline::Imatrix> imatrix;
        pipeline::ImatrixMap map;
    };
    runner_.start(
        [file = path.toStdString()](const CancelToken&) {
            auto imatrix = std::make_shared<const pipeline::Imatrix>(pipeline::Imatrix::read(file));
            return Loaded{imatrix, pipeline::imatrixMap(*imatrix)};
        },
        [this, path](Loaded loaded) {
            imatrix_ = std::move(loaded.imatrix);
            path_ = path;
            map_->setMap(std::move(loaded.map));
            updateCoverage();
            showColumns();
            emit imatrixLoaded(path);
        },
        [this](const QString& message) { emit errorOccurred(tr("Cannot open the imatrix"), message); });
}

void ImatrixPage::setTensor(const QString& name) {
    tensor_ = name;
    showColumns();
}

void ImatrixPage::updateCoverage() {
    coverage_.reset();
    if (imatrix_ && checkpoint_ && config_) coverage_ = pipeline::imatrixCoverage(*imatrix_, *checkpoint_, *config_);
    caption_->setText(captionText());
}

// The selected tensor's linear, when it is a decoder linear the imatrix has an entry for.
void ImatrixPage::showColumns() {
    columns_.clear();
    layer_ = -1;
    module_.clear();
    const io::CheckpointTensor* t = checkpoint_ ? checkpoint_->find(tensor_.toStdString()) : nullptr;
    if (imatrix_ && config_ && t && t->naming.role == io::TensorRole::Linear && t->naming.layer >= 0 &&
        t->naming.layer < config_->numLayers) {
        layer_ = t->naming.layer;
        module_ = QString::fromStdString(t->naming.module);
        try {
            columns_ = pipeline::columnImportance(*imatrix_, *config_, layer_, t->naming.module);
        } catch (const Error& e) {  // an entry of another width: another model's imatrix
            emit errorOccurred(tr("The imatrix does not fit this linear"), QString::fromUtf8(e.what()));
        }
    }
    columnsPlot_->clearGraphs();
    if (!columns_.empty()) {
        QCPGraph* graph = columnsPlot_->addGraph();
        graph->setLineStyle(QCPGraph::lsImpulse);
        graph->setPen(QPen(kColumnColor));
        for (std::size_t c = 0; c < columns_.size(); ++c)
            graph->addData(static_cast<double>(c), std::max(double(columns_[c]), 1e-12));  // 0 at the floor
        columnsPlot_->setTitle(tr("%1, layer %2").arg(module_).arg(layer_));
    } else {
        columnsPlot_->setTitle(tr("Importance per input column"));
    }
    resetColumnsView();
    caption_->setText(captionText());
}

void ImatrixPage::resetColumnsView() {
    if (columns_.empty()) {
        columnsPlot_->replot();
        return;
    }
    columnsPlot_->xAxis->setRange(-0.5, static_cast<double>(columns_.size()) - 0.5);
    bool found = false;
    const QCPRange r = columnsPlot_->graph(0)->getValueRange(found);
    if (found) columnsPlot_->yAxis->setRange(r.lower / 2.0, r.upper * 2.0);
    columnsPlot_->replot();
}

QString ImatrixPage::toolTipAt(double x) const {
    const long long c = std::llround(x);
    if (c < 0 || c >= static_cast<long long>(columns_.size())) return {};
    return tr("column %1: Σx²/count %2").arg(c).arg(valueText(columns_[static_cast<std::size_t>(c)]));
}

QString ImatrixPage::captionText() const {
    if (!imatrix_)
        return tr(
            "Open llama.cpp's importance matrix (File ▸ Open imatrix…, the GGUF or legacy .dat file "
            "llama-imatrix writes): the GGUF methods of the Quantize panel then weigh each column's squared "
            "error by it, as llama-quantize --imatrix does.");
    const pipeline::ImatrixInfo& info = imatrix_->info();
    QStringList datasets;
    for (const auto& d : info.datasets) datasets << QString::fromStdString(d);
    QString text = tr("%1: %2 entries").arg(path_).arg(imatrix_->entries().size());
    if (!datasets.isEmpty()) text += tr(" from %1").arg(datasets.join(QStringLiteral(", ")));
    if (info.chunkCount > 0)
        text += info.chunkSize > 0 ? tr(", %1 chunks of %2 tokens").arg(info.chunkCount).arg(info.chunkSize)
                                   : tr(", %1 chunks").arg(info.chunkCount);
    text += QStringLiteral(".");
    if (coverage_)
        text += coverage_->covered == coverage_->linears
                    ? tr(" It has an entry for each of this model's %1 linears.").arg(coverage_->linears)
                    : tr(" It has an entry for %1 of this model's %2 linears (the first wants %3).")
                          .arg(coverage_->covered)
                          .arg(coverage_->linears)
                          .arg(QString::fromStdString(coverage_->firstWanted));
    if (!columns_.empty()) {
        const auto order = byImportance(columns_);
        QStringList top;
        for (std::size_t i = 0; i < std::min<std::size_t>(kListedColumns, order.size()); ++i)
            top << QString::number(order[i]);
        const float lo = columns_[order.back()], hi = columns_[order.front()];
        text += tr(" Layer %1 %2: %3 … %4 over %5 input columns (ratio %6); the most important: %7.")
                    .arg(layer_)
                    .arg(module_)
                    .arg(valueText(lo), valueText(hi))
                    .arg(columns_.size())
                    .arg(lo > 0.0f ? valueText(double(hi) / double(lo)) : QStringLiteral("∞"))
                    .arg(top.join(QStringLiteral(", ")));
    } else if (layer_ >= 0) {
        text += tr(" Layer %1 %2 has no entry.").arg(layer_).arg(module_);
    }
    return text;
}

}  // namespace qs::gui
