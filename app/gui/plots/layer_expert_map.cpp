#include "plots/layer_expert_map.h"

#include <cmath>
#include <limits>

#include "plots/heat_gradient.h"

namespace qs::gui {

LayerExpertMap::LayerExpertMap(const QString& title, const QString& fileName, const QString& scaleLabel,
                               QWidget* parent)
    : PlotView(parent), map_(new QCPColorMap(xAxis, yAxis)), scale_(new QCPColorScale(this)) {
    setTitle(title);
    setDefaultFileName(fileName);
    plotLayout()->addElement(1, 1, scale_);  // beside the axes, under the title row
    auto* margins = new QCPMarginGroup(this);
    axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    scale_->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    scale_->setType(QCPAxis::atRight);
    scale_->axis()->setLabel(scaleLabel);
    map_->setColorScale(scale_);
    map_->setGradient(heatGradient());
    // What shows through a dense layer's row: hatched, never a colour of the scale.
    axisRect()->setBackground(QBrush(QColor(150, 150, 150), Qt::BDiagPattern));
    map_->setInterpolate(false);
    xAxis->grid()->setVisible(false);
    yAxis->grid()->setVisible(false);
    yAxis->setRangeReversed(true);  // layer 0 on top, as in the Overview
    xAxis->setLabel(tr("expert (click to select its first linear)"));
    yAxis->setLabel(tr("layer"));
    setLayerTicks(xAxis);
    setLayerTicks(yAxis);
    connect(this, &PlotView::resetViewRequested, this, &LayerExpertMap::resetView);
    connect(this, &PlotView::clicked, this, [this](double x, double y) {
        int layer = 0, expert = 0;
        if (!cellAt(x, y, layer, expert)) return;
        if (const QString module = moduleAt(layer, expert); !module.isEmpty()) emit expertClicked(layer, module);
    });
}

void LayerExpertMap::drawCells(int layers, int experts, const std::function<double(int, int)>& value,
                               const QCPRange& colours) {
    layers_ = layers;
    experts_ = experts;
    QCPColorMapData* data = map_->data();
    data->setSize(experts, layers);
    // Cell centres at whole numbers; QCustomPlot spreads a lone cell over the whole range it is given.
    const auto centres = [](int n) { return n == 1 ? QCPRange(-0.5, 0.5) : QCPRange(0, n - 1); };
    data->setRange(centres(experts), centres(layers));
    for (int layer = 0; layer < layers; ++layer)
        for (int expert = 0; expert < experts; ++expert) data->setCell(expert, layer, value(layer, expert));
    map_->setDataRange(colours);
    resetView();
}

void LayerExpertMap::clearCells() {
    layers_ = experts_ = 0;
    map_->data()->clear();
    replot();
}

void LayerExpertMap::resetView() {
    if (layers_ == 0 || experts_ == 0) return;
    xAxis->setRange(-0.5, experts_ - 0.5);
    yAxis->setRange(-0.5, layers_ - 0.5);
    replot();
}

double LayerExpertMap::cellValue(int layer, int expert) const {
    if (layer < 0 || expert < 0 || layer >= layers_ || expert >= experts_)
        return std::numeric_limits<double>::quiet_NaN();
    return map_->data()->cell(expert, layer);
}

bool LayerExpertMap::cellAt(double x, double y, int& layer, int& expert) const {
    const long long e = std::llround(x);
    const long long l = std::llround(y);
    if (e < 0 || l < 0 || e >= experts_ || l >= layers_) return false;
    layer = static_cast<int>(l);
    expert = static_cast<int>(e);
    return true;
}

}  // namespace qs::gui
