#include "pages/overview_page.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <set>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QToolButton>
#include <QVBoxLayout>

#include "qs/model/model_config.h"

#include "experts/expert_overview.h"
#include "pages/quantized_codes.h"
#include "plots/heat_gradient.h"
#include "plots/plot_view.h"
#include "text/number_format.h"

namespace qs::gui {
namespace {

QString shortModuleName(const std::string& module) {
    const QString name = QString::fromStdString(module);
    return name.section(QLatin1Char('.'), -1);  // "self_attn.q_proj" → "q_proj"
}

// The MoE router's module ("mlp.gate" in most families), empty for a dense model or a config the model
// does not read.
std::string moeRouterModule(const io::Checkpoint& checkpoint) {
    try {
        const model::ModelConfig config = model::ModelConfig::fromCheckpoint(checkpoint);
        return config.isMoe() ? config.moe.names.router() : std::string();
    } catch (const std::exception&) {
        return {};
    }
}

// Column c's label: "router" for the MoE router (its own name, "gate", reads as gate_proj), else its
// module's last name, or its last two where another column's ends the same (a MoE model's
// "shared_experts.gate_proj" beside its dense first layers' "mlp.gate_proj").
QString columnLabel(const std::vector<std::string>& modules, std::size_t c, const std::string& router) {
    if (!router.empty() && modules[c] == router) return QStringLiteral("router");
    const QString last = shortModuleName(modules[c]);
    for (std::size_t other = 0; other < modules.size(); ++other)
        if (other != c && shortModuleName(modules[other]) == last)
            return QString::fromStdString(modules[c]).section(QLatin1Char('.'), -2);
    return last;
}

QCPRange finiteRange(const analysis::LayerOverview& overview, analysis::LayerStatistic statistic) {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    for (const auto& cell : overview.cells) {
        if (!cell) continue;
        const double v = cell->value(statistic);
        if (!std::isfinite(v)) continue;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    if (!(lo <= hi)) return QCPRange(0, 1);
    return colorScaleRange(lo, hi);
}

}  // namespace

QCPRange colorScaleRange(double lo, double hi) {
    // One value everywhere (no outliers at all: 0) got ±1e-12 around it, and the colour scale read
    // -4e-13 to 4e-13; zero gets [0, 1], any other value ±half of itself.
    if (lo == hi) return lo == 0.0 ? QCPRange(0, 1) : QCPRange(lo - 0.5 * std::abs(lo), hi + 0.5 * std::abs(hi));
    return QCPRange(lo, hi);
}

OverviewPage::OverviewPage(QWidget* parent)
    : InspectorPage(parent),
      statistic_(new QComboBox(this)),
      moduleLabel_(new QLabel(tr("Modules:"), this)),
      module_(new QComboBox(this)),
      progress_(new QProgressBar(this)),
      computeButton_(new QPushButton(tr("Compute"), this)),
      status_(new QLabel(this)),
      plot_(new PlotView(this)),
      title_(new QCPTextElement(plot_, QString(), QFont(font().family(), 10, QFont::Bold))),
      map_(new QCPColorMap(plot_->xAxis, plot_->yAxis)),
      scale_(new QCPColorScale(plot_)) {
    for (const analysis::LayerStatistic s : analysis::kLayerStatistics) {
        statistic_->addItem(QString::fromUtf8(analysis::statisticName(s).data()), int(s));
    }
    statistic_->setCurrentIndex(statistic_->findData(int(analysis::LayerStatistic::Kurtosis)));
    progress_->setRange(0, 1000);
    progress_->setTextVisible(false);
    progress_->setMaximumWidth(220);
    progress_->hide();
    module_->setObjectName(QStringLiteral("overviewModules"));
    module_->setToolTip(
        tr("A mixture of experts: its dense linears (attention, router, shared expert), or one linear of "
           "every expert as a layer × expert map"));
    module_->addItem(tr("dense linears"));
    moduleLabel_->hide();
    module_->hide();
    status_->setWordWrap(true);
    // Wide enough for their longest entry when there is room, but never what sets the page's minimum
    // width: at 1366 px that squeezed the Checkpoint dock once a MoE's Modules combo appeared.
    statistic_->setMinimumWidth(80);
    module_->setMinimumWidth(80);

    auto* exportButton = new QToolButton(this);
    exportButton->setText(tr("Export"));
    exportButton->setPopupMode(QToolButton::InstantPopup);
    exportButton->setMenu(plot_->exportMenu());
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Statistic:"), this));
    controls->addWidget(statistic_);
    controls->addSpacing(12);
    controls->addWidget(moduleLabel_);
    controls->addWidget(module_);
    controls->addSpacing(12);
    controls->addWidget(progress_);
    controls->addWidget(computeButton_);
    controls->addStretch(1);
    controls->addWidget(exportButton);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(controls);
    layout->addWidget(plot_, 1);
    layout->addWidget(status_);

    plot_->plotLayout()->addElement(0, 1, scale_);
    plot_->plotLayout()->insertRow(0);
    plot_->plotLayout()->addElement(0, 0, title_);
    auto* margins = new QCPMarginGroup(plot_);
    plot_->axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    scale_->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    scale_->setType(QCPAxis::atRight);
    map_->setColorScale(scale_);
    map_->setGradient(heatGradient());
    map_->setInterpolate(false);
    // What shows through a cell without a weight (a dense layer in a layer × expert view): hatched, never
    // a colour of the scale.
    plot_->axisRect()->setBackground(QBrush(QColor(150, 150, 150), Qt::BDiagPattern));
    plot_->xAxis->grid()->setVisible(false);
    plot_->yAxis->grid()->setVisible(false);
    plot_->yAxis->setRangeReversed(true);  // layer 0 on top, as in a table
    plot_->xAxis->setLabel(tr("module"));
    plot_->yAxis->setLabel(tr("layer"));
    plot_->setDefaultFileName(QStringLiteral("layer_overview"));
    plot_->setToolTipProvider([this](double x, double y) { return toolTipAt(x, y); });
    plot_->setCsvProvider([this] { return csv(); });

    connect(statistic_, &QComboBox::currentIndexChanged, this, &OverviewPage::draw);
    connect(module_, &QComboBox::currentIndexChanged, this, &OverviewPage::showModuleView);
    connect(computeButton_, &QPushButton::clicked, this, &OverviewPage::toggleComputation);
    connect(plot_, &PlotView::clicked, this, [this](double x, double y) {
        std::size_t row = 0, column = 0;
        if (cellAt(x, y, row, column)) activateCell(row, column);
    });
    connect(plot_, &PlotView::resetViewRequested, this, &OverviewPage::resetView);
    connect(plot_, &PlotView::exportFailed, this,
            [this](const QString& m) { emit errorOccurred(tr("Export failed"), m); });
    connect(&runner_, &JobRunner::busyChanged, this, &InspectorPage::busyChanged);
    connect(&runner_, &JobRunner::busyChanged, this, &OverviewPage::setRunning);
    setRunning(false);
    status_->setText(tr("Open a checkpoint to see its layers."));
}

void OverviewPage::setCheckpoint(CheckpointPtr checkpoint) {
    checkpoint_ = std::move(checkpoint);
    overview_.reset();
    computed_.clear();
    runner_.cancel();
    expertLinears_ = checkpoint_ ? expertLinears(*checkpoint_) : std::vector<ExpertLinear>{};
    routerModule_ = checkpoint_ ? moeRouterModule(*checkpoint_) : std::string();
    {
        const QSignalBlocker blocker(module_);
        module_->clear();
        module_->addItem(tr("dense linears"));
        std::set<std::string> containers;
        for (const ExpertLinear& e : expertLinears_) containers.insert(e.container);
        for (const ExpertLinear& e : expertLinears_)  // "experts: gate_proj"; the container too where there are several
            module_->addItem(QStringLiteral("%1: %2").arg(
                QString::fromStdString(containers.size() > 1 ? e.container : std::string("experts")),
                QString::fromStdString(e.linear)));
    }
    moduleLabel_->setVisible(!expertLinears_.empty());
    module_->setVisible(!expertLinears_.empty());
    draw();
    stale_ = checkpoint_ != nullptr;
    if (stale_ && isVisible()) refresh();
}

void OverviewPage::setTensor(const QString& name) {
    tensor_ = name;
    highlightCurrent();
    plot_->replot();
}

QStringList OverviewPage::moduleViews() const {
    QStringList views;
    for (int i = 0; i < module_->count(); ++i) views.append(module_->itemText(i));
    return views;
}

QString OverviewPage::moduleView() const { return module_->currentText(); }

bool OverviewPage::setModuleView(const QString& view) {
    const int at = module_->findText(view);
    if (at < 0) return false;
    module_->setCurrentIndex(at);
    return true;
}

bool OverviewPage::showsExperts() const {
    return module_->currentIndex() > 0 && static_cast<std::size_t>(module_->currentIndex()) <= expertLinears_.size();
}

// Another entry of the module list: its view if computed before, else computed now (when shown).
void OverviewPage::showModuleView() {
    runner_.cancel();
    const auto it = computed_.find(module_->currentIndex());
    if (it != computed_.end()) {
        overview_ = it->second;
        stale_ = false;
    } else {
        overview_.reset();
        stale_ = checkpoint_ != nullptr;
    }
    draw();
    setRunning(false);
    if (stale_ && isVisible()) refresh();
}

analysis::LayerStatistic OverviewPage::statistic() const {
    return static_cast<analysis::LayerStatistic>(statistic_->currentData().toInt());
}

bool OverviewPage::isBusy() const { return runner_.isBusy() || (stale_ && isVisible()); }

void OverviewPage::showEvent(QShowEvent* event) {
    InspectorPage::showEvent(event);
    if (stale_) refresh();
}

// The overview reads every linear weight of the view once: computed for the whole checkpoint when first
// shown. A MoE checkpoint's dense view leaves the experts out: they have views of their own.
void OverviewPage::refresh() {
    if (!checkpoint_) return;
    stale_ = false;
    analysis::LayerOverviewOptions options;
    options.progress = [this](const qs::Progress& p) {
        QMetaObject::invokeMethod(
            this,
            [this, fraction = p.fraction, message = QString::fromStdString(p.message)] {
                showProgress(fraction, message);
            },
            Qt::QueuedConnection);
    };
    if (!expertLinears_.empty()) options.skip = isExpertWeight;
    const int view = module_->currentIndex();
    std::optional<ExpertLinear> experts;
    if (showsExperts()) experts = expertLinears_[static_cast<std::size_t>(view - 1)];
    runner_.start(
        [checkpoint = checkpoint_, options, experts](const qs::CancelToken& token) {
            analysis::LayerOverviewOptions o = options;
            o.cancel = token;
            o.quantized = overviewDecoding(checkpoint);  // on the worker, when the Overview is shown
            if (experts) return computeExpertOverview(*checkpoint, expertLayout(*checkpoint, *experts), o);
            return analysis::computeLayerOverview(*checkpoint, o);
        },
        [this, view](analysis::LayerOverview overview) {
            computed_[view] = overview;
            if (module_->currentIndex() != view) return;
            overview_ = std::move(overview);
            draw();
        },
        [this](const QString& message) {
            status_->setText(message);
            emit errorOccurred(tr("Layer overview failed"), message);
        });
}

void OverviewPage::toggleComputation() {
    if (runner_.isBusy()) {
        runner_.cancel();
        status_->setText(tr("Cancelled. Press Compute to start again."));
    } else {
        refresh();
    }
}

void OverviewPage::showProgress(double fraction, const QString& message) {
    if (!runner_.isBusy()) return;  // a late report of a job that has ended
    progress_->setValue(static_cast<int>(fraction * progress_->maximum()));
    status_->setText(tr("Reading %1…").arg(message));
}

void OverviewPage::setRunning(bool running) {
    progress_->setVisible(running);
    progress_->setValue(0);
    computeButton_->setText(running ? tr("Cancel") : overview_ ? tr("Recompute") : tr("Compute"));
    computeButton_->setEnabled(running || checkpoint_ != nullptr);
}

void OverviewPage::draw() {
    plot_->clearItems();
    QCPColorMapData* data = map_->data();
    if (!overview_ || overview_->empty()) {
        data->clear();
        map_->setDataRange(QCPRange(0, 1));  // not the previous checkpoint's scale
        scale_->axis()->setLabel(QString());
        title_->setText(QString());
        if (overview_) status_->setText(tr("No linear weights inside decoder layers that this view can read."));
        plot_->replot();
        return;
    }
    const analysis::LayerOverview& o = *overview_;
    const analysis::LayerStatistic stat = statistic();
    const int columns = static_cast<int>(o.modules.size());
    const int rows = static_cast<int>(o.layers.size());
    data->setSize(columns, rows);
    data->setRange(QCPRange(0, std::max(columns - 1, 1)), QCPRange(0, std::max(rows - 1, 1)));
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < columns; ++c) {
            const analysis::WeightStats* cell = o.cell(static_cast<std::size_t>(r), static_cast<std::size_t>(c));
            data->setCell(c, r, cell ? cell->value(stat) : std::numeric_limits<double>::quiet_NaN());
        }
    }
    map_->setDataRange(finiteRange(o, stat));
    const QString statName = QString::fromUtf8(analysis::statisticName(stat).data());
    scale_->axis()->setLabel(
        stat == analysis::LayerStatistic::OutlierFraction ? tr("fraction beyond %1σ").arg(o.outlierSigma) : statName);
    drawAxes(o);
    highlightCurrent();
    if (showsExperts()) {
        const QString linear =
            QString::fromStdString(expertLinears_[static_cast<std::size_t>(module_->currentIndex() - 1)].linear);
        title_->setText(tr("%1 per layer × expert (%2)").arg(statName, linear));
        status_->setText(
            tr("%1 layers × %2 experts, %3 of each. Click a cell to select its tensor (stacked experts: the "
               "tensor holding them); hover for all statistics.")
                .arg(rows)
                .arg(columns)
                .arg(linear));
    } else {
        title_->setText(tr("%1 per layer × module").arg(statName));
        status_->setText(
            tr("%1 layers × %2 modules. Click a cell to select its tensor; hover for all statistics.")
                .arg(rows)
                .arg(columns) +
            (expertLinears_.empty() ? QString() : tr(" The experts are under Modules, one linear at a time.")));
    }
    resetView();
}

void OverviewPage::drawAxes(const analysis::LayerOverview& o) {
    PlotView::setLayerTicks(plot_->yAxis);
    if (showsExperts()) {  // 128 expert names would overlap: numbered like the layers
        PlotView::setLayerTicks(plot_->xAxis);
        plot_->xAxis->setTickLabelRotation(0);
        plot_->xAxis->setLabel(tr("expert"));
        return;
    }
    plot_->xAxis->setLabel(tr("module"));
    auto modules = QSharedPointer<QCPAxisTickerText>::create();
    for (std::size_t c = 0; c < o.modules.size(); ++c)
        modules->addTick(static_cast<double>(c), columnLabel(o.modules, c, routerModule_));
    plot_->xAxis->setTicker(modules);
    plot_->xAxis->setTickLabelRotation(o.modules.size() > 8 ? -35 : 0);
}

void OverviewPage::highlightCurrent() {
    plot_->clearItems();
    if (!overview_) return;
    const analysis::LayerOverview& o = *overview_;
    for (std::size_t r = 0; r < o.layers.size(); ++r) {
        for (std::size_t c = 0; c < o.modules.size(); ++c) {
            const analysis::WeightStats* cell = o.cell(r, c);
            if (!cell || QString::fromStdString(cell->tensor) != tensor_) continue;
            auto* box = new QCPItemRect(plot_);
            box->topLeft->setCoords(static_cast<double>(c) - 0.5, static_cast<double>(r) - 0.5);
            box->bottomRight->setCoords(static_cast<double>(c) + 0.5, static_cast<double>(r) + 0.5);
            box->setPen(QPen(QColor(40, 220, 255), 2.5));
            box->setBrush(Qt::NoBrush);  // stacked experts share their tensor: the layer's every expert
        }
    }
}

void OverviewPage::resetView() {
    if (!overview_ || overview_->empty()) return;
    plot_->xAxis->setRange(-0.5, static_cast<double>(overview_->modules.size()) - 0.5);
    plot_->yAxis->setRange(-0.5, static_cast<double>(overview_->layers.size()) - 0.5);
    plot_->replot();
}

// A column's module as the module log names it: "self_attn.q_proj", or an expert's "mlp.experts.5.gate_proj".
QString OverviewPage::columnName(std::size_t column) const {
    if (!showsExperts()) return QString::fromStdString(overview_->modules[column]);
    const ExpertLinear& e = expertLinears_[static_cast<std::size_t>(module_->currentIndex() - 1)];
    return QStringLiteral("%1.%2.%3")
        .arg(QString::fromStdString(e.container))
        .arg(column)
        .arg(QString::fromStdString(e.linear));
}

bool OverviewPage::cellAt(double x, double y, std::size_t& row, std::size_t& column) const {
    if (!overview_ || overview_->empty()) return false;
    const long long c = std::llround(x);
    const long long r = std::llround(y);
    if (c < 0 || r < 0 || c >= static_cast<long long>(overview_->modules.size()) ||
        r >= static_cast<long long>(overview_->layers.size())) {
        return false;
    }
    row = static_cast<std::size_t>(r);
    column = static_cast<std::size_t>(c);
    return true;
}

void OverviewPage::activateCell(std::size_t layerRow, std::size_t moduleColumn) {
    if (!overview_) return;
    if (const analysis::WeightStats* cell = overview_->cell(layerRow, moduleColumn)) {
        emit tensorActivated(QString::fromStdString(cell->tensor));
    }
}

QString OverviewPage::toolTipAt(double x, double y) const {
    std::size_t row = 0, column = 0;
    if (!cellAt(x, y, row, column)) return {};
    const analysis::LayerOverview& o = *overview_;
    const analysis::WeightStats* cell = o.cell(row, column);
    const QString where = tr("layer %1 · %2").arg(o.layers[row]).arg(columnName(column));
    if (!cell) return where + (showsExperts() ? tr("\n(no such expert in this layer)") : tr("\n(no dense weight)"));
    return tr("%1\nσ = %2\nmax|w| = %3\nexcess kurtosis = %4\nbeyond %5σ: %6 %\n%7")
        .arg(where, valueText(cell->stddev), valueText(cell->maxAbs), valueText(cell->kurtosis))
        .arg(o.outlierSigma)
        .arg(valueText(100.0 * cell->outlierFraction), QString::fromStdString(cell->tensor));
}

CsvTable OverviewPage::csv() const {
    CsvTable table;
    table.header = {QStringLiteral("layer"),           QStringLiteral("module"),
                    QStringLiteral("tensor"),          QStringLiteral("std"),
                    QStringLiteral("max_abs"),         QStringLiteral("excess_kurtosis"),
                    QStringLiteral("outlier_fraction")};
    if (!overview_) return table;
    const analysis::LayerOverview& o = *overview_;
    for (std::size_t r = 0; r < o.layers.size(); ++r) {
        for (std::size_t c = 0; c < o.modules.size(); ++c) {
            const analysis::WeightStats* cell = o.cell(r, c);
            if (!cell) continue;
            table.rows.append({QString::number(o.layers[r]), columnName(c), QString::fromStdString(cell->tensor),
                               QString::number(cell->stddev, 'g', 9), QString::number(cell->maxAbs, 'g', 9),
                               QString::number(cell->kurtosis, 'g', 9),
                               QString::number(cell->outlierFraction, 'g', 9)});
        }
    }
    return table;
}

}  // namespace qs::gui
