#include "plots/serving_scales_plot.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "plots/series_colors.h"

namespace qs::gui {

QString servingScaleSeries(const formats::ServingScale& scale) {
    if (scale.kind == "k_scale" || scale.kind == "v_scale") return QString::fromStdString(scale.kind);
    // "model.layers.3.mlp.down_proj.input_scale" -> "down_proj input"
    const std::string& name = scale.tensor;
    const std::size_t end = name.size() - scale.kind.size() - 1;
    const std::size_t start = name.rfind('.', end - 1);
    const std::string module =
        start == std::string::npos ? name.substr(0, end) : name.substr(start + 1, end - start - 1);
    return QString::fromStdString(module) + QObject::tr(" input");
}

ServingScalesPlot::ServingScalesPlot(QWidget* parent) : PlotView(parent) {
    setTitle(tr("Activation and KV-cache scales per layer"));
    setDefaultFileName(QStringLiteral("serving_scales"));
    setLogValueAxis();
    yAxis->setLabel(tr("scale (amax / 448; NVFP4: amax / 2688)"));
    xAxis->setLabel(tr("layer"));
    setLayerTicks(xAxis);
    placeLegendBelow();
    setToolTipProvider([this](double x, double) { return toolTipAt(x); });
    setCsvProvider([this] { return csv(); });
    connect(this, &PlotView::resetViewRequested, this, &ServingScalesPlot::resetView);
}

void ServingScalesPlot::setScales(std::vector<formats::ServingScale> scales) {
    scales_ = std::move(scales);
    draw();
}

void ServingScalesPlot::draw() {
    clearGraphs();
    layers_ = 0;
    std::map<QString, QCPGraph*> graphs;
    for (const auto& s : scales_) {
        if (s.layer < 0) continue;
        const QString series = servingScaleSeries(s);
        QCPGraph*& graph = graphs[series];
        if (!graph) {
            graph = addGraph();
            graph->setName(series);
            graph->setPen(QPen(seriesColor(static_cast<int>(graphs.size()) - 1), 1.5));
            graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
        }
        graph->addData(static_cast<double>(s.layer), static_cast<double>(s.value));
        layers_ = std::max(layers_, s.layer + 1);
    }
    resetView();
}

void ServingScalesPlot::resetView() {
    xAxis->setRange(-0.5, std::max(layers_, 1) - 0.5);
    fitLogValueAxis(1e-3);
    replot();
}

QString ServingScalesPlot::toolTipAt(double x) const {
    const long layer = std::lround(x);
    QStringList lines;
    for (const auto& s : scales_)
        if (s.layer == layer)
            lines << QStringLiteral("%1: %2").arg(servingScaleSeries(s)).arg(static_cast<double>(s.value), 0, 'g', 5);
    if (lines.isEmpty()) return {};
    lines.prepend(tr("<b>layer %1</b>").arg(layer));
    return lines.join(QStringLiteral("<br>"));
}

CsvTable ServingScalesPlot::csv() const {
    CsvTable table;
    table.header = {QStringLiteral("tensor"), QStringLiteral("kind"), QStringLiteral("layer"), QStringLiteral("value")};
    for (const auto& s : scales_)
        table.rows.push_back({QString::fromStdString(s.tensor), QString::fromStdString(s.kind),
                              QString::number(s.layer), QString::number(static_cast<double>(s.value), 'g', 9)});
    return table;
}

}  // namespace qs::gui
