#include "plots/output_error_plot.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "plots/series_colors.h"
#include "text/results_format.h"

namespace qs::gui {

OutputErrorPlot::OutputErrorPlot(QWidget* parent) : PlotView(parent) {
    setTitle(tr("Output error per linear"));
    setDefaultFileName(QStringLiteral("output_error"));
    setLogValueAxis();
    yAxis->setLabel(tr("relative output error"));
    xAxis->setLabel(tr("linear, by layer (click to select it)"));
    placeLegendBelow();
    setToolTipProvider([this](double x, double) { return toolTipAt(x); });
    setCsvProvider([this] { return csv(); });
    connect(this, &PlotView::resetViewRequested, this, &OutputErrorPlot::resetView);
    connect(this, &PlotView::clicked, this, [this](double x, double) {
        if (const int i = linearAt(x); i >= 0) {
            const Linear& l = linears_[static_cast<std::size_t>(i)];
            emit linearClicked(l.layer, QString::fromStdString(l.module));
        }
    });
}

void OutputErrorPlot::setResult(JobResultPtr result) {
    result_ = std::move(result);
    drawResult();
}

int OutputErrorPlot::linearAt(double x) const {
    const long i = std::lround(x);
    return i >= 0 && i < static_cast<long>(linears_.size()) ? static_cast<int>(i) : -1;
}

double OutputErrorPlot::errorOf(const pipeline::MethodResult& m, const Linear& linear) const {
    for (const pipeline::ModuleLog& row : m.modules)
        if (row.layer == linear.layer && row.module == linear.module) return row.outputError;
    return std::nan("");
}

void OutputErrorPlot::drawResult() {
    clearGraphs();
    std::set<Linear> all;
    if (result_)
        for (const auto& m : result_->methods)
            for (const auto& row : m.modules) all.insert({row.layer, row.module});
    linears_.assign(all.begin(), all.end());
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (std::size_t i = 0; i < linears_.size(); ++i)
        if (i == 0 || linears_[i].layer != linears_[i - 1].layer)
            ticker->addTick(static_cast<double>(i), tr("layer %1").arg(linears_[i].layer));
    xAxis->setTicker(ticker);
    if (result_)
        for (std::size_t i = 0; i < result_->methods.size(); ++i) drawMethod(result_->methods[i], static_cast<int>(i));
    resetView();
}

void OutputErrorPlot::drawMethod(const pipeline::MethodResult& m, int index) {
    if (!m.error.empty() || m.modules.empty()) return;
    QCPGraph* graph = addGraph();
    graph->setName(shortLabel(m));  // the full label is in the tooltip and the table
    graph->setPen(QPen(seriesColor(index), 1.5));
    graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 5));
    for (std::size_t i = 0; i < linears_.size(); ++i) {
        const double e = errorOf(m, linears_[i]);
        if (std::isfinite(e) && e > 0) graph->addData(static_cast<double>(i), e);
    }
}

void OutputErrorPlot::resetView() {
    xAxis->setRange(-0.5, std::max<double>(static_cast<double>(linears_.size()), 1.0) - 0.5);
    fitLogValueAxis(1e-4);
    replot();
}

QString OutputErrorPlot::toolTipAt(double x) const {
    const int i = linearAt(x);
    if (i < 0 || !result_) return {};
    const Linear& l = linears_[static_cast<std::size_t>(i)];
    QStringList lines{tr("<b>layer %1 %2</b>").arg(l.layer).arg(QString::fromStdString(l.module))};
    for (const auto& m : result_->methods)
        if (m.error.empty()) lines << QStringLiteral("%1: %2").arg(methodLabel(m), klText(errorOf(m, l)));
    return lines.join(QStringLiteral("<br>"));
}

CsvTable OutputErrorPlot::csv() const {
    CsvTable table{{QStringLiteral("layer"), QStringLiteral("module")}, {}};
    if (!result_) return table;
    for (const auto& m : result_->methods)
        if (m.error.empty()) table.header << methodLabel(m);
    for (const Linear& l : linears_) {
        QStringList row{QString::number(l.layer), QString::fromStdString(l.module)};
        for (const auto& m : result_->methods)
            if (m.error.empty()) row << QString::number(errorOf(m, l), 'g', 8);
        table.rows.append(row);
    }
    return table;
}

}  // namespace qs::gui
