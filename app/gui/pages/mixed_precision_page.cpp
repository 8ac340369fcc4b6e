#include "pages/mixed_precision_page.h"

#include <algorithm>
#include <cmath>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "qs/error.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/mixed_precision_report.h"
#include "qs/pipeline/mixed_precision_rules.h"
#include "qs/pipeline/plan_builder.h"

#include "jobs/run_cache.h"
#include "plots/mixed_allocation_map.h"
#include "plots/plot_view.h"
#include "plots/series_colors.h"
#include "text/number_format.h"

namespace qs::gui {
namespace {

constexpr int kGroupSize = 128;  // the candidates' group size, as the CLI's default
constexpr int kFrontierBudgets = 48;

QString kl(double v) { return QString::number(v, 'g', 3); }

}  // namespace

MixedPrecisionPage::MixedPrecisionPage(QWidget* parent)
    : InspectorPage(parent),
      candidates_(new QLineEdit(QStringLiteral("gptq2,gptq4,gptq8,fp8-channel,nvfp4"), this)),
      sensitivity_(new QComboBox(this)),
      rules_(new QTableWidget(0, 2, this)),
      rulesProblem_(new QLabel(this)),
      measureButton_(new QPushButton(tr("Measure"), this)),
      quantizeButton_(new QPushButton(tr("Quantize allocation"), this)),
      progress_(new QProgressBar(this)),
      status_(new QLabel(this)),
      plot_(new PlotView(this)),
      slider_(new QSlider(Qt::Horizontal, this)),
      pointLabel_(new QLabel(this)),
      map_(new MixedAllocationMap(this)) {
    candidates_->setToolTip(
        tr("The methods the budget chooses among, comma-separated (each measured once on the whole model)"));
    sensitivity_->addItem(tr("Group KL (one fused group quantized at a time)"), int(pipeline::Sensitivity::GroupKl));
    sensitivity_->addItem(tr("Layer KL (one layer at a time, chosen per layer)"), int(pipeline::Sensitivity::LayerKl));
    sensitivity_->addItem(tr("Output error (no extra passes)"), int(pipeline::Sensitivity::OutputError));
    rules_->setHorizontalHeaderLabels({tr("Linears (regex)"), tr("Method")});
    rules_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    rules_->verticalHeader()->hide();
    rules_->setToolTip(
        tr("Applied before the allocation: the linears whose name (model.layers.N.mlp.down_proj) the regex "
           "finds get the method, or stay dense when the method is \"dense\""));
    auto* addRule = new QPushButton(tr("Add rule"), this);
    auto* removeRule = new QPushButton(tr("Remove rule"), this);
    addRule->setObjectName(QStringLiteral("addRule"));
    removeRule->setObjectName(QStringLiteral("removeRule"));
    measureButton_->setObjectName(QStringLiteral("measure"));
    quantizeButton_->setObjectName(QStringLiteral("quantizeAllocation"));
    candidates_->setObjectName(QStringLiteral("candidates"));
    sensitivity_->setObjectName(QStringLiteral("sensitivity"));
    status_->setWordWrap(true);
    rulesProblem_->setStyleSheet(QStringLiteral("color: #b00020"));
    progress_->setRange(0, 1000);
    progress_->setVisible(false);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    slider_->setEnabled(false);
    slider_->setToolTip(tr("The budget: moves along the frontier, one allocation per step"));
    quantizeButton_->setEnabled(false);

    plot_->setDefaultFileName(QStringLiteral("pareto"));
    plot_->setTitle(tr("Predicted KL against bits per weight"));
    plot_->xAxis->setLabel(tr("bits per weight (quantized linears)"));
    plot_->yAxis->setLabel(tr("KL divergence"));
    plot_->setLogValueAxis();
    frontierGraph_ = plot_->addGraph();
    frontierGraph_->setName(tr("frontier (predicted)"));
    frontierGraph_->setPen(QPen(seriesColor(0), 1.5));
    frontierGraph_->setLineStyle(QCPGraph::lsStepLeft);
    frontierGraph_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
    uniformGraph_ = plot_->addGraph();
    uniformGraph_->setName(tr("uniform methods (measured)"));
    uniformGraph_->setLineStyle(QCPGraph::lsNone);
    uniformGraph_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssSquare, seriesColor(1), seriesColor(1), 8));
    measuredGraph_ = plot_->addGraph();
    measuredGraph_->setName(tr("allocations (measured)"));
    measuredGraph_->setLineStyle(QCPGraph::lsNone);
    measuredGraph_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, seriesColor(2), seriesColor(2), 10));
    currentGraph_ = plot_->addGraph();
    currentGraph_->setName(tr("budget"));
    currentGraph_->setLineStyle(QCPGraph::lsNone);
    currentGraph_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(Qt::black, 2), Qt::NoBrush, 12));
    plot_->placeLegendBelow();
    plot_->setToolTipProvider([this](double x, double) -> QString {
        if (frontier_.empty()) return {};
        const auto it = std::min_element(frontier_.begin(), frontier_.end(), [x](const auto& a, const auto& b) {
            return std::fabs(a.bitsPerWeight - x) < std::fabs(b.bitsPerWeight - x);
        });
        return tr("%1 bpw: predicted KL %2\n%3")
            .arg(it->bitsPerWeight, 0, 'f', 3)
            .arg(kl(it->predictedKl))
            .arg(QString::fromStdString(pipeline::allocationSummary(*table_, *it)));
    });

    // Two columns, for a laptop's 1366x768 where the tab gets about 570x440 pixels beside the docks:
    // the inputs, the rules, the run and the budget down a narrow left column; the plot over the
    // heat map on the right, split to taste. Everything fits without scrolling at that size.
    sensitivity_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    sensitivity_->setMinimumContentsLength(12);  // the long names elide; the list shows them whole
    for (int i = 0; i < sensitivity_->count(); ++i)
        sensitivity_->setItemData(i, sensitivity_->itemText(i), Qt::ToolTipRole);
    const int ruleRow = rules_->verticalHeader()->defaultSectionSize();
    rules_->setMinimumHeight(2 * ruleRow + rules_->horizontalHeader()->sizeHint().height() + 2 * rules_->frameWidth());
    rules_->setMaximumHeight(4 * ruleRow + rules_->horizontalHeader()->sizeHint().height() + 2 * rules_->frameWidth());
    rulesProblem_->setWordWrap(true);
    pointLabel_->setWordWrap(true);
    auto* ruleButtons = new QHBoxLayout;
    ruleButtons->addWidget(addRule);
    ruleButtons->addWidget(removeRule);
    auto* runRow = new QHBoxLayout;
    runRow->addWidget(measureButton_);
    runRow->addWidget(quantizeButton_);
    auto* sliderRow = new QHBoxLayout;
    sliderRow->addWidget(new QLabel(tr("Budget"), this));
    sliderRow->addWidget(slider_, 1);
    auto* controls = new QWidget(this);
    auto* left = new QVBoxLayout(controls);
    left->setContentsMargins(0, 0, 0, 0);
    left->addWidget(new QLabel(tr("Candidates"), this));
    left->addWidget(candidates_);
    left->addWidget(new QLabel(tr("Sensitivity"), this));
    left->addWidget(sensitivity_);
    left->addWidget(new QLabel(tr("Rules"), this));
    left->addWidget(rules_);
    left->addLayout(ruleButtons);
    left->addWidget(rulesProblem_);
    left->addLayout(runRow);
    left->addWidget(progress_);
    left->addLayout(sliderRow);
    left->addWidget(pointLabel_);
    left->addWidget(status_);
    left->addStretch(1);
    auto* right = new QSplitter(Qt::Vertical, this);
    right->addWidget(plot_);
    right->addWidget(map_);
    right->setStretchFactor(0, 1);  // the map at its working height, the plot the rest
    right->setStretchFactor(1, 0);
    right->setChildrenCollapsible(false);
    auto* columns = new QSplitter(Qt::Horizontal, this);
    columns->addWidget(controls);
    columns->addWidget(right);
    columns->setStretchFactor(0, 0);
    columns->setStretchFactor(1, 1);
    columns->setChildrenCollapsible(false);
    // In a scroll area only for a window smaller than a laptop's: there the tab scrolls rather than
    // squeezing the docks around it.
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(columns);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(scroll);

    connect(addRule, &QPushButton::clicked, this, [this] {
        const int row = rules_->rowCount();
        {
            const QSignalBlocker block(rules_);  // an empty row is no rule yet
            rules_->insertRow(row);
            rules_->setItem(row, 0, new QTableWidgetItem);
            rules_->setItem(row, 1, new QTableWidgetItem);
        }
        rules_->editItem(rules_->item(row, 0));
    });
    connect(removeRule, &QPushButton::clicked, this, [this] {
        if (rules_->currentRow() >= 0) rules_->removeRow(rules_->currentRow());
        validateRules();
    });
    connect(rules_, &QTableWidget::itemChanged, this, &MixedPrecisionPage::validateRules);
    connect(candidates_, &QLineEdit::textChanged, this, &MixedPrecisionPage::validateRules);
    connect(measureButton_, &QPushButton::clicked, this, [this] {
        if (runner_.isBusy())
            cancel();
        else
            measure();
    });
    connect(quantizeButton_, &QPushButton::clicked, this, &MixedPrecisionPage::quantizeAllocation);
    connect(slider_, &QSlider::valueChanged, this, &MixedPrecisionPage::showPoint);
    connect(&runner_, &JobRunner::busyChanged, this, [this](bool busy) {
        setRunning(busy);
        emit busyChanged(busy);
    });
    setStatus(tr("Open a checkpoint, choose the candidates and Measure: every candidate quantizes the model once."));
}

MixedPrecisionPage::~MixedPrecisionPage() = default;

void MixedPrecisionPage::setCheckpoint(CheckpointPtr checkpoint) {
    runner_.cancel();
    checkpoint_ = std::move(checkpoint);
    planner_.reset();
    table_.reset();
    frontier_.clear();
    measured_.clear();
    measuredPlan_.reset();
    allocations_.reset();
    exportSettings_.clear();
    map_->clear();
    slider_->setEnabled(false);
    quantizeButton_->setEnabled(false);
    pointLabel_->clear();
    drawPlot();
    validateRules();
}

bool MixedPrecisionPage::isBusy() const { return runner_.isBusy(); }

void MixedPrecisionPage::setCandidates(const QString& list) { candidates_->setText(list); }

void MixedPrecisionPage::setSensitivity(pipeline::Sensitivity measure) {
    sensitivity_->setCurrentIndex(sensitivity_->findData(int(measure)));
}

void MixedPrecisionPage::setSampling(int samples, int sequenceLength, int evaluationSamples) {
    samples_ = samples, sequenceLength_ = sequenceLength, evaluationSamples_ = evaluationSamples;
}

void MixedPrecisionPage::setRules(const std::vector<std::pair<QString, QString>>& rows) {
    const QSignalBlocker block(rules_);
    rules_->setRowCount(0);
    for (const auto& [regex, method] : rows) {
        const int r = rules_->rowCount();
        rules_->insertRow(r);
        rules_->setItem(r, 0, new QTableWidgetItem(regex));
        rules_->setItem(r, 1, new QTableWidgetItem(method));
    }
    validateRules();
}

QString MixedPrecisionPage::rulesProblem() const { return rulesProblem_->text(); }

// The candidates and rules as the allocator takes them, checked against the open checkpoint the way
// the CLI checks --candidates, --override and --ignore (a regex that matches no linear, a rule over
// part of a fused group, an unknown method); the first problem in one line.
std::optional<MixedPrecisionPage::Inputs> MixedPrecisionPage::validatedInputs(QString& problem) const {
    try {
        Inputs in;
        in.candidates = pipeline::parseMethodList(candidates_->text().toStdString(), kGroupSize);
        for (int r = 0; r < rules_->rowCount(); ++r) {
            const QString regex = rules_->item(r, 0) ? rules_->item(r, 0)->text().trimmed() : QString();
            const QString method = rules_->item(r, 1) ? rules_->item(r, 1)->text().trimmed() : QString();
            if (regex.isEmpty() && method.isEmpty()) continue;
            if (regex.isEmpty()) throw Error(tr("rule %1: the regex is empty").arg(r + 1).toStdString());
            if (method.compare(QStringLiteral("dense"), Qt::CaseInsensitive) == 0)
                in.rules.ignore.push_back(regex.toStdString());
            else {
                in.overrides.push_back((regex + QLatin1Char('=') + method).toStdString());
                in.rules.overrides.push_back(pipeline::parseOverride(in.overrides.back(), kGroupSize));
            }
        }
        if (checkpoint_) {
            const auto config = model::ModelConfig::fromCheckpoint(*checkpoint_);
            in.rules.tensorPrefix = config.arch.tensorPrefix;  // a VLM's rules name model.language_model.layers.N.
            (void)pipeline::applyRules(in.candidates.front(), in.rules, config.numLayers, "");
        }
        problem.clear();
        return in;
    } catch (const std::exception& e) {
        problem = QString::fromUtf8(e.what());
        return std::nullopt;
    }
}

void MixedPrecisionPage::validateRules() {
    QString problem;
    (void)validatedInputs(problem);
    rulesProblem_->setText(problem);
    rulesProblem_->setToolTip(problem);
}

bool MixedPrecisionPage::measure() {
    if (!checkpoint_) {
        setStatus(tr("Open a checkpoint first."), true);
        return false;
    }
    QString problem;
    const auto inputs = validatedInputs(problem);
    rulesProblem_->setText(problem);
    if (!inputs) {
        setStatus(problem, true);
        return false;
    }
    const auto measure = pipeline::Sensitivity(sensitivity_->currentData().toInt());
    pipeline::PlanSettings settings;
    settings.checkpoint = checkpoint_->root();
    settings.methods = pipeline::measuredMethods(inputs->candidates, inputs->rules);
    settings.calibration = {{}, samples_, sequenceLength_};
    settings.evaluation = {{}, evaluationSamples_, sequenceLength_};
    const ProgressCallback progress = progressCallback();
    // The allocator's frontier is computed on the worker too: on a deep model its knapsacks take
    // seconds, which the GUI thread must not wait for.
    struct Measured {
        pipeline::JobPlan plan;
        std::string calibrationFile, evaluationFile;
        std::unique_ptr<pipeline::SensitivityTable> table;
        std::unique_ptr<pipeline::MixedPrecisionPlanner> planner;  // reads *table
        std::vector<pipeline::MixedAllocation> frontier;
    };
    setStatus(tr("Measuring %1 candidates…").arg(settings.methods.size()));
    runner_.start(
        [settings, measure, progress, rules = inputs->rules,
         names = pipeline::namesOf(inputs->candidates)](const CancelToken& token) {
            Measured m;
            pipeline::BuiltPlan built =
                pipeline::buildJobPlan(settings);  // reads and tokenizes the texts on the worker
            m.plan = std::move(built.plan);
            m.calibrationFile = built.calibrationFile.string();
            m.evaluationFile = built.evaluationFile.string();
            m.table = std::make_unique<pipeline::SensitivityTable>(
                pipeline::measureSensitivity(m.plan, settings.methods, measure, progress, token));
            m.planner = std::make_unique<pipeline::MixedPrecisionPlanner>(*m.table, rules, names);
            m.frontier = m.planner->frontier(kFrontierBudgets);
            return m;
        },
        [this, settings, measure, inputs = *inputs](Measured m) {
            // As quantize --target-bpw records them; each allocation adds its own (quantizeAllocation).
            measuredSettings_ = {{"group_size", kGroupSize},
                                 {"seed", settings.seed},
                                 {"calibration",
                                  {{"file", m.calibrationFile},
                                   {"samples", settings.calibration.samples},
                                   {"seq_len", settings.calibration.sequenceLength}}},
                                 {"evaluation",
                                  {{"file", m.evaluationFile},
                                   {"samples", settings.evaluation.samples},
                                   {"seq_len", settings.evaluation.sequenceLength}}},
                                 {"mixed_precision", pipeline::mixedPrecisionRecord(
                                                         {inputs.candidates, inputs.overrides, inputs.rules.ignore,
                                                          std::string(pipeline::sensitivityName(measure))})}};
            m.plan.methods.clear();
            m.plan.perLayerKl = m.plan.perGroupKl = false;
            measuredPlan_ = std::move(m.plan);
            table_ = std::move(m.table);
            planner_ = std::move(m.planner);
            frontier_ = std::move(m.frontier);
            showFrontier();
            emit measurementFinished();
        },
        [this](const QString& message) { setStatus(message, true); });
    return true;
}

void MixedPrecisionPage::cancel() {
    runner_.cancel();
    setStatus(tr("Cancelled."));
}

void MixedPrecisionPage::setTable(pipeline::SensitivityTable table) {
    const std::vector<std::string> names = pipeline::namesOf(table.candidates);
    table_ = std::make_unique<pipeline::SensitivityTable>(std::move(table));
    planner_ = std::make_unique<pipeline::MixedPrecisionPlanner>(*table_, pipeline::ModuleRules{}, names);
    frontier_ = planner_->frontier(kFrontierBudgets);
    showFrontier();
}

void MixedPrecisionPage::showFrontier() {
    measured_.clear();
    allocations_.reset();
    exportSettings_.clear();
    {
        const QSignalBlocker block(slider_);
        slider_->setRange(0, int(frontier_.size()) - 1);
        slider_->setValue(int(frontier_.size()) / 2);
    }
    slider_->setEnabled(frontier_.size() > 1);
    quantizeButton_->setEnabled(measuredPlan_.has_value());
    setStatus(tr("%1 allocations on the frontier, from %2 to %3 bits per weight (%4).")
                  .arg(frontier_.size())
                  .arg(planner_->cheapestBpw(), 0, 'f', 3)
                  .arg(planner_->richestBpw(), 0, 'f', 3)
                  .arg(QString::fromUtf8(pipeline::sensitivityName(table_->measure).data())));
    drawPlot();
    showPoint(slider_->value());
}

std::optional<pipeline::MixedAllocation> MixedPrecisionPage::currentAllocation() const {
    const int i = slider_->value();
    if (i < 0 || std::size_t(i) >= frontier_.size()) return std::nullopt;
    return frontier_[std::size_t(i)];
}

// One step of the slider: the heat map and the marker only (the plot's other graphs stay), so a move
// costs a paint of the map and a queued replot.
void MixedPrecisionPage::showPoint(int index) {
    if (index < 0 || std::size_t(index) >= frontier_.size() || !planner_) return;
    const pipeline::MixedAllocation& a = frontier_[std::size_t(index)];
    map_->setAllocation(planner_->methods(a, "budget"), pipeline::namesOf(table_->candidates));
    currentGraph_->setData({a.bitsPerWeight}, {std::max(a.predictedKl, 1e-12)}, true);
    pointLabel_->setText(tr("%1 bits per weight: predicted KL %2 (%3)")
                             .arg(a.bitsPerWeight, 0, 'f', 3)
                             .arg(kl(a.predictedKl))
                             .arg(QString::fromStdString(pipeline::allocationSummary(*table_, a))));
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void MixedPrecisionPage::drawPlot() {
    QVector<double> fx, fy, ux, uy, mx, my;
    for (const auto& a : frontier_) fx << a.bitsPerWeight, fy << std::max(a.predictedKl, 1e-12);
    if (table_)
        for (std::size_t c = 0; c < table_->candidates.size(); ++c)
            if (std::isfinite(table_->uniformKl[c]) && table_->uniformKl[c] > 0)
                ux << table_->uniformBpw[c], uy << table_->uniformKl[c];
    for (const auto& p : measured_) mx << p.bitsPerWeight, my << std::max(p.measuredKl, 1e-12);
    frontierGraph_->setData(fx, fy, true);
    uniformGraph_->setData(ux, uy);
    measuredGraph_->setData(mx, my);
    if (frontier_.empty()) currentGraph_->data()->clear();
    double lo = 1e-6, hi = 1.0, left = 2.0, right = 9.0;
    if (!fy.isEmpty()) {
        lo = *std::min_element(fy.begin(), fy.end()), hi = *std::max_element(fy.begin(), fy.end());
        left = fx.front(), right = fx.back();
        for (double v : uy) lo = std::min(lo, v), hi = std::max(hi, v);
        for (double v : my) lo = std::min(lo, v), hi = std::max(hi, v);
        for (double v : ux) left = std::min(left, v), right = std::max(right, v);
    }
    plot_->yAxis->setRange(lo / 3, hi * 3);
    plot_->xAxis->setRange(left - 0.25, right + 0.25);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool MixedPrecisionPage::quantizeAllocation() {
    const auto a = currentAllocation();
    if (!a || !measuredPlan_ || !planner_) {
        setStatus(tr("Measure first: the allocation comes from the measurement."), true);
        return false;
    }
    pipeline::JobPlan plan = *measuredPlan_;
    plan.mixed = {planner_->methods(*a, tr("mixed %1 bpw").arg(a->bitsPerWeight, 0, 'f', 2).toStdString())};
    plan.perLayerKl = true;  // the Results page plots every method's KL per layer, a mix's too
    // Its codes stay on disk, in a folder of the run cache that lives as long as the result. Nothing
    // offers to resume an allocation, so the folder is marked finished from the start: it goes with
    // the lease whether the job ends, fails or is cancelled.
    std::shared_ptr<RunLease> lease;
    try {
        lease = RunCache::inUserCache().startNew("allocation");
    } catch (const std::exception& e) {
        setStatus(QString::fromStdString(e.what()), true);
        return false;
    }
    lease->markFinished();
    plan.workDir = lease->folder();
    plan.resultsOnDisk = true;
    const ProgressCallback progress = progressCallback();
    setStatus(tr("Quantizing the allocation at %1 bits per weight…").arg(a->bitsPerWeight, 0, 'f', 3));
    runner_.start(
        [plan, progress, lease](const CancelToken& token) {
            pipeline::JobResult r = pipeline::Job(plan).run(progress, token);
            const pipeline::MethodResult& m = r.methods.front();
            if (!m.error.empty()) throw Error(m.label() + ": " + m.error);
            return leasedResult(std::move(r), lease);
        },
        [this, chosen = *a](std::shared_ptr<const pipeline::JobResult> r) {
            // The allocations of one measurement share its evaluation text: one result, one row each.
            if (allocations_) {
                auto all = std::make_shared<pipeline::JobResult>(*allocations_);
                all->methods.push_back(r->methods.front());
                all->seconds += r->seconds;
                r = std::move(all);
            }
            allocations_ = std::move(r);
            const pipeline::MethodResult& m = allocations_->methods.back();
            measured_.push_back({m.bitsPerWeight, chosen.predictedKl, m.kl.meanKld.value});
            const MeasuredPoint& p = measured_.back();
            nlohmann::json settings = measuredSettings_;
            settings["method"] = m.label();
            pipeline::recordMixedResult(settings["mixed_precision"], m, pipeline::toJson(*table_, chosen));
            exportSettings_[m.label()] = std::move(settings);
            setStatus(tr("Quantized: %1 bits per weight, measured KL %2 against the predicted %3; in Results and "
                         "Export as \"%4\".")
                          .arg(p.bitsPerWeight, 0, 'f', 3)
                          .arg(kl(p.measuredKl))
                          .arg(kl(p.predictedKl))
                          .arg(QString::fromStdString(m.label())));
            drawPlot();
            emit allocationMeasured();
            emit allocationsQuantized(allocations_);
        },
        [this](const QString& message) { setStatus(message, true); });
    return true;
}

nlohmann::json MixedPrecisionPage::exportSettings(const std::string& label) const {
    const auto it = exportSettings_.find(label);
    return it == exportSettings_.end() ? nlohmann::json::object() : it->second;
}

QString MixedPrecisionPage::status() const { return status_->text(); }

void MixedPrecisionPage::setRunning(bool running) {
    measureButton_->setText(running ? tr("Cancel") : tr("Measure"));
    quantizeButton_->setEnabled(!running && measuredPlan_.has_value() && !frontier_.empty());
    candidates_->setEnabled(!running);
    sensitivity_->setEnabled(!running);
    rules_->setEnabled(!running);
    progress_->setVisible(running);
    if (running) progress_->setValue(0);
}

// Progress from the worker, shown on the GUI thread (dropped once the page is gone).
ProgressCallback MixedPrecisionPage::progressCallback() {
    QPointer<MixedPrecisionPage> self(this);
    return [self](const qs::Progress& p) {
        QMetaObject::invokeMethod(
            self,
            [self, p] {
                if (self) self->showProgress(p);
            },
            Qt::QueuedConnection);
    };
}

void MixedPrecisionPage::showProgress(const qs::Progress& p) {
    if (!runner_.isBusy()) return;
    progress_->setValue(int(std::clamp(p.fraction, 0.0, 1.0) * 1000));
    progress_->setFormat(QString::fromStdString(p.message).isEmpty() ? QStringLiteral("%p%")
                                                                     : QString::fromStdString(p.message));
}

void MixedPrecisionPage::setStatus(const QString& text, bool problem) {
    status_->setText(text);
    status_->setStyleSheet(problem ? QStringLiteral("color: #b00020") : QString());
}

}  // namespace qs::gui
