#include "pages/hessian_page.h"

#include <algorithm>
#include <cmath>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "qs/formats/detect.h"
#include "qs/io/tensor_name.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/quantized_source.h"
#include "qs/pipeline/run_text.h"

#include "experts/expert_path.h"
#include "jobs/quantize_settings.h"
#include "panels/spin_box.h"
#include "plots/plot_view.h"
#include "text/number_format.h"

namespace qs::gui {
namespace {

constexpr int kListedChannels = 32;  // the head of the act-order, listed in the table
const QColor kChannelColor(70, 130, 180);
const QColor kFirstColor(214, 69, 65);

struct Request {
    CheckpointPtr checkpoint;
    int layer = 0;
    int samples = 8;
    int sequenceLength = 128;
    pipeline::DeviceChoice device = pipeline::DeviceChoice::Auto;
};

// On the worker: the checkpoint's calibration text (else the bundled one) through the layers up to
// `layer`, on the chosen device; a report per layer run.
pipeline::LayerHessianDiagonals calibrate(const Request& r, const std::shared_ptr<const pipeline::Backend>& backend,
                                          const qs::ProgressCallback& progress, const qs::CancelToken& cancel) {
    const io::Checkpoint& checkpoint = *r.checkpoint;
    const model::Tokenizer tokenizer = model::Tokenizer::forCheckpoint(checkpoint);
    const std::filesystem::path text = pipeline::resolveRunText(pipeline::TextRole::Calibration, {}, checkpoint);
    const pipeline::TokenSequences sequences =
        pipeline::tokenWindows(tokenizer, pipeline::loadTexts(text), r.samples, r.sequenceLength, text.string());
    return pipeline::hessianDiagonals(checkpoint, r.layer, sequences, *backend, progress, cancel);
}

}  // namespace

HessianPage::HessianPage(QWidget* parent)
    : InspectorPage(parent),
      samples_(makeSpinBox(1, 1024, 8, this)),
      sequenceLength_(makeSpinBox(8, 4096, 128, this)),
      progress_(new QProgressBar(this)),
      calibrateButton_(new QPushButton(tr("Calibrate"), this)),
      plot_(new PlotView(this)),
      table_(new QTableWidget(0, 3, this)),
      caption_(new QLabel(this)) {
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Calibration samples:"), this));
    controls->addWidget(samples_);
    controls->addSpacing(12);
    controls->addWidget(new QLabel(tr("tokens each:"), this));
    controls->addWidget(sequenceLength_);
    controls->addStretch(1);
    progress_->setRange(0, 1000);
    progress_->setTextVisible(false);
    progress_->setMaximumWidth(220);
    controls->addWidget(progress_);
    controls->addWidget(calibrateButton_);
    table_->setHorizontalHeaderLabels({tr("act-order rank"), tr("channel"), tr("H_cc")});
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(plot_);
    split->addWidget(table_);
    split->setStretchFactor(0, 1);
    split->setSizes({700, 260});
    table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
    caption_->setWordWrap(true);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(controls);
    layout->addWidget(split, 1);
    layout->addWidget(caption_);

    plot_->setDefaultFileName(QStringLiteral("hessian_diagonal"));
    plot_->xAxis->setLabel(tr("input channel"));
    plot_->yAxis->setLabel(tr("H_cc = 2 Σ x_c² / n"));
    plot_->setLogValueAxis();
    plot_->setToolTipProvider([this](double x, double) { return toolTipAt(x); });
    plot_->setCsvProvider([this] { return csv(); });
    connect(plot_, &PlotView::resetViewRequested, this, &HessianPage::resetView);
    connect(plot_, &PlotView::exportFailed, this,
            [this](const QString& m) { emit errorOccurred(tr("Export failed"), m); });
    for (QSpinBox* spin : {samples_, sequenceLength_})
        connect(spin, &QSpinBox::valueChanged, this, [this] {
            hessians_.reset();
            refresh();
        });
    connect(&runner_, &JobRunner::busyChanged, this, &InspectorPage::busyChanged);
    connect(&runner_, &JobRunner::busyChanged, this, &HessianPage::setRunning);
    connect(calibrateButton_, &QPushButton::clicked, this, &HessianPage::toggleCalibration);
    setRunning(false);
    showMessage(tr("Select a linear layer's weight: its layer is calibrated on the calibration text."));
}

void HessianPage::setCheckpoint(CheckpointPtr checkpoint) {
    checkpoint_ = std::move(checkpoint);
    hessians_.reset();
    layer_ = -1;
    module_.clear();
    runner_.cancel();
    // Calibrating runs the model: a quantized checkpoint on its decoded weights, unless they do not decode.
    refusal_ =
        checkpoint_
            ? QString::fromStdString(pipeline::undecodableSourceRefusal(*checkpoint_, formats::detect(*checkpoint_)))
            : QString();
    showMessage(refusal_.isEmpty() ? tr("Select a linear layer's weight.") : refusal_);
    setRunning(false);
}

void HessianPage::setTensor(const QString& name) {
    if (!refusal_.isEmpty()) {
        showMessage(refusal_);
        return;
    }
    const io::TensorName naming = io::parseTensorName(name.toStdString());
    if (const auto expert = parseExpertPath(naming.module); naming.layer >= 0 && expert && expert->expert < 0) {
        layer_ = -1;  // gpt-oss: one tensor for every expert, each with its own Hessian
        module_.clear();
        runner_.cancel();
        showMessage(
            tr("%1 holds every expert stacked in one tensor, and each expert has its own Hessian: "
               "quantscope-cli inspect --hessian %2 lists them (mlp.experts.N.gate_up_proj, mlp.experts.N.down_proj).")
                .arg(name)
                .arg(naming.layer));
        return;
    }
    if (naming.role != io::TensorRole::Linear || naming.layer < 0) {
        layer_ = -1;
        module_.clear();
        runner_.cancel();
        showMessage(tr("%1 is not a decoder layer's linear: the Hessian is of a linear's inputs.").arg(name));
        return;
    }
    layer_ = naming.layer;
    module_ = QString::fromStdString(naming.module);
    refresh();
    setRunning(runner_.isBusy());
}

void HessianPage::setSampling(int samples, int sequenceLength) {
    samples_->setValue(samples);
    sequenceLength_->setValue(sequenceLength);
}

void HessianPage::setDevice(pipeline::DeviceChoice device) { device_ = device; }

bool HessianPage::isBusy() const { return runner_.isBusy() || (stale_ && isVisible()); }

void HessianPage::showEvent(QShowEvent* event) {
    InspectorPage::showEvent(event);
    if (stale_) refresh();
}

bool HessianPage::layerCalibrated() const { return hessians_ && hessians_->layer.layer == layer_; }

const pipeline::HessianDiagonal* HessianPage::shown() const {
    if (!layerCalibrated()) return nullptr;
    const auto it = hessians_->layer.modules.find(module_.toStdString());
    return it == hessians_->layer.modules.end() ? nullptr : &it->second;
}

void HessianPage::refresh() {
    if (!refusal_.isEmpty()) {
        showMessage(refusal_);
        return;
    }
    if (!checkpoint_ || layer_ < 0) return;
    if (layerCalibrated()) {  // another of the layer's linears, or its router
        draw();
        return;
    }
    if (!isVisible()) {
        stale_ = true;  // a calibration runs only for a tab someone looks at
        return;
    }
    stale_ = false;
    showMessage(
        tr("Calibrating layer %1 on %2 × %3 tokens…").arg(layer_).arg(samples_->value()).arg(sequenceLength_->value()));
    const Request request{checkpoint_, layer_, samples_->value(), sequenceLength_->value(), device_};
    // From the worker, to this page on its own thread (a late report of a cancelled run is dropped there).
    const qs::ProgressCallback progress = [this](const qs::Progress& p) {
        QMetaObject::invokeMethod(
            this, [this, p] { showProgress(p); }, Qt::QueuedConnection);
    };
    started_.start();
    remaining_ = RemainingTime();
    runner_.start(
        [request, progress](const qs::CancelToken& token) {
            // Auto's device was checked once at start-up; choosing it again here is cheap.
            const auto backend = pipeline::selectBackend(request.device).backend;
            return Calibrated{calibrate(request, backend, progress, token),
                              QString::fromStdString(backend->description())};
        },
        [this](Calibrated h) { showLayer(std::move(h)); }, [this](const QString& message) { showMessage(message); });
}

// A deep layer needs every layer before it run: which one, and the time left at the rate so far.
void HessianPage::showProgress(const qs::Progress& p) {
    if (!runner_.isBusy()) return;  // a late report of a calibration that has ended
    progress_->setValue(static_cast<int>(p.fraction * progress_->maximum()));
    const double seconds = remaining_.update(p.fraction, static_cast<double>(started_.elapsed()) / 1000.0);
    QString text = tr("Calibrating layer %1 on %2 × %3 tokens: running layer %4 of %5")
                       .arg(layer_)
                       .arg(samples_->value())
                       .arg(sequenceLength_->value())
                       .arg(p.step)
                       .arg(p.steps);
    if (p.fraction > 0.0 && seconds >= 0.0) text += tr(", about %1 left").arg(durationText(seconds));
    caption_->setText(text + QStringLiteral("…"));
}

void HessianPage::setRunning(bool running) {
    progress_->setVisible(running);
    progress_->setValue(0);
    calibrateButton_->setText(running ? tr("Cancel") : layerCalibrated() ? tr("Recalibrate") : tr("Calibrate"));
    calibrateButton_->setEnabled(running || (checkpoint_ && layer_ >= 0 && refusal_.isEmpty()));
}

void HessianPage::toggleCalibration() {
    if (runner_.isBusy()) {
        runner_.cancel();
        showMessage(tr("Cancelled. Calibrate starts it again."));
        return;
    }
    hessians_.reset();  // again, e.g. after a cancel or with new calibration text beside the checkpoint
    refresh();
}

void HessianPage::showLayer(Calibrated hessians) {
    hessians_ = std::move(hessians);
    setRunning(runner_.isBusy());
    draw();
}

void HessianPage::showMessage(const QString& message) {
    plot_->clearGraphs();
    plot_->replot();
    table_->setRowCount(0);
    caption_->setText(message);
}

void HessianPage::draw() {
    const pipeline::HessianDiagonal* d = shown();
    if (!d) {
        if (layerCalibrated()) showMessage(notCalibratedText());
        return;
    }
    plot_->clearGraphs();
    QCPGraph* all = plot_->addGraph();
    all->setName(tr("channels"));
    all->setLineStyle(QCPGraph::lsImpulse);
    all->setPen(QPen(kChannelColor));
    QCPGraph* first = plot_->addGraph();
    first->setLineStyle(QCPGraph::lsNone);
    first->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QPen(kFirstColor), QBrush(kFirstColor), 6));
    for (std::size_t c = 0; c < d->diagonal.size(); ++c) {
        const double value = std::max(d->diagonal[c], 1e-12);  // a dead channel (H_cc = 0) at the floor
        all->addData(static_cast<double>(c), value);
        if (d->actOrderRank[c] < kListedChannels) first->addData(static_cast<double>(c), value);
    }
    fillTable(*d);
    resetView();
    caption_->setText(captionText());
}

void HessianPage::fillTable(const pipeline::HessianDiagonal& d) {
    const int n = std::min<int>(kListedChannels, static_cast<int>(d.diagonal.size()));
    table_->setRowCount(n);
    for (std::size_t c = 0; c < d.diagonal.size(); ++c) {
        const int rank = d.actOrderRank[c];
        if (rank >= n) continue;
        table_->setItem(rank, 0, new QTableWidgetItem(QString::number(rank + 1)));
        table_->setItem(rank, 1, new QTableWidgetItem(QString::number(c)));
        table_->setItem(rank, 2, new QTableWidgetItem(valueText(d.diagonal[c])));
    }
}

void HessianPage::resetView() {
    const pipeline::HessianDiagonal* d = shown();
    if (!d || d->diagonal.empty()) return;
    plot_->xAxis->setRange(-0.5, static_cast<double>(d->diagonal.size()) - 0.5);
    bool found = false;
    const QCPRange r = plot_->graph(0)->getValueRange(found);
    if (found) plot_->yAxis->setRange(r.lower / 2.0, r.upper * 2.0);
    plot_->replot();
}

QString HessianPage::captionText() const {
    const pipeline::HessianDiagonal* d = shown();
    if (!d) return caption_->text();
    const auto [lo, hi] = std::minmax_element(d->diagonal.begin(), d->diagonal.end());
    // An expert is calibrated on every token, as the Job does by default; how many the router chose says
    // how much of its work the model really asks of it.
    const QString routed =
        d->routedTokens < 0 ? QString()
                            : tr(" The router sent this expert %1 of the %2 tokens; its Hessian is over all of them, "
                                 "as the default all-expert calibration sees it.")
                                  .arg(d->routedTokens)
                                  .arg(hessians_->layer.samples);
    return tr("Layer %1 %2: diag(H) of %3 input channels from %4 calibration tokens on %5, %6 … %7 (ratio %8). "
              "Red: the first %9 channels of GPTQ's act-order (largest H_cc first).")
               .arg(layer_)
               .arg(module_)
               .arg(d->diagonal.size())
               .arg(hessians_->layer.samples)
               .arg(hessians_->device)
               .arg(valueText(*lo), valueText(*hi))
               .arg(*lo > 0 ? valueText(*hi / *lo) : QStringLiteral("∞"))
               .arg(kListedChannels) +
           routed;
}

// The layer is calibrated but the selected linear has no diagonal of its own (a MoE's router).
QString HessianPage::notCalibratedText() const {
    if (io::isRouterModule(module_.toStdString()))
        return tr("Layer %1 %2 is the experts' router, which stays dense: no Hessian is collected for it.")
            .arg(layer_)
            .arg(module_);
    return tr("Layer %1 %2 is not one of the linears the calibration sees.").arg(layer_).arg(module_);
}

QString HessianPage::toolTipAt(double x) const {
    const pipeline::HessianDiagonal* d = shown();
    const long c = std::lround(x);
    if (!d || c < 0 || c >= static_cast<long>(d->diagonal.size())) return {};
    const auto i = static_cast<std::size_t>(c);
    return tr("channel %1<br>H_cc %2<br>act-order rank %3 of %4")
        .arg(c)
        .arg(valueText(d->diagonal[i]))
        .arg(d->actOrderRank[i] + 1)
        .arg(d->diagonal.size());
}

CsvTable HessianPage::csv() const {
    CsvTable table{{QStringLiteral("channel"), QStringLiteral("h_diagonal"), QStringLiteral("act_order_rank")}, {}};
    const pipeline::HessianDiagonal* d = shown();
    if (!d) return table;
    for (std::size_t c = 0; c < d->diagonal.size(); ++c)
        table.rows.append(
            {QString::number(c), QString::number(d->diagonal[c], 'g', 9), QString::number(d->actOrderRank[c] + 1)});
    return table;
}

}  // namespace qs::gui
