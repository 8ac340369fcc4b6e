#include "plots/kl_per_layer_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "plots/series_colors.h"
#include "text/results_format.h"

namespace qs::gui {
namespace {

bool measured(const pipeline::MethodResult& m) { return m.error.empty() && !m.perLayerKl.empty(); }

}  // namespace

KlPerLayerPlot::KlPerLayerPlot(QWidget* parent) : PlotView(parent) {
    setTitle(tr("KLD, one layer quantized"));
    setDefaultFileName(QStringLiteral("kl_per_layer"));
    setLogValueAxis();
    yAxis->setLabel(tr("mean KLD (nats)"));
    xAxis->setLabel(tr("layer (click to select it)"));
    setLayerTicks(xAxis);
    placeLegendBelow();
    setToolTipProvider([this](double x, double) { return toolTipAt(x); });
    setCsvProvider([this] { return csv(); });
    connect(this, &PlotView::resetViewRequested, this, &KlPerLayerPlot::resetView);
    connect(this, &PlotView::clicked, this, [this](double x, double) {
        if (const int layer = layerAt(x); layer >= 0) emit layerClicked(layer);
    });
}

void KlPerLayerPlot::setResult(JobResultPtr result) {
    result_ = std::move(result);
    drawResult();
}

int KlPerLayerPlot::layerAt(double x) const {
    const long layer = std::lround(x);
    return layer >= 0 && layer < layers_ ? static_cast<int>(layer) : -1;
}

void KlPerLayerPlot::drawResult() {
    clearGraphs();
    layers_ = 0;
    if (result_) {
        for (std::size_t i = 0; i < result_->methods.size(); ++i) {
            const pipeline::MethodResult& m = result_->methods[i];
            if (!measured(m)) continue;
            QCPGraph* graph = addGraph();
            graph->setName(shortLabel(m));  // the full label is in the tooltip and the table
            graph->setPen(QPen(seriesColor(static_cast<int>(i)), 2));
            graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
            for (std::size_t layer = 0; layer < m.perLayerKl.size(); ++layer)
                if (std::isfinite(m.perLayerKl[layer]) && m.perLayerKl[layer] > 0)
                    graph->addData(static_cast<double>(layer), m.perLayerKl[layer]);
            layers_ = std::max(layers_, static_cast<int>(m.perLayerKl.size()));
        }
    }
    resetView();
}

void KlPerLayerPlot::resetView() {
    xAxis->setRange(-0.5, std::max(layers_, 1) - 0.5);
    fitLogValueAxis(1e-5);
    replot();
}

QString KlPerLayerPlot::toolTipAt(double x) const {
    const int layer = layerAt(x);
    if (layer < 0 || !result_) return {};
    QStringList lines{tr("<b>layer %1</b> only quantized").arg(layer)};
    for (const auto& m : result_->methods)
        if (measured(m) && static_cast<std::size_t>(layer) < m.perLayerKl.size())
            lines << QStringLiteral("%1: %2").arg(methodLabel(m),
                                                  klText(m.perLayerKl[static_cast<std::size_t>(layer)]));
    return lines.join(QStringLiteral("<br>"));
}

CsvTable KlPerLayerPlot::csv() const {
    CsvTable table{{QStringLiteral("layer")}, {}};
    if (!result_) return table;
    std::vector<const pipeline::MethodResult*> shown;
    for (const auto& m : result_->methods)
        if (measured(m)) {
            shown.push_back(&m);
            table.header << methodLabel(m);
        }
    for (int layer = 0; layer < layers_; ++layer) {
        QStringList row{QString::number(layer)};
        for (const auto* m : shown)
            row << (static_cast<std::size_t>(layer) < m->perLayerKl.size()
                        ? QString::number(m->perLayerKl[static_cast<std::size_t>(layer)], 'g', 8)
                        : QString());
        table.rows.append(row);
    }
    return table;
}

}  // namespace qs::gui
