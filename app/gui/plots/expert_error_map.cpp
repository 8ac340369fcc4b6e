#include "plots/expert_error_map.h"

#include <cmath>
#include <limits>

#include "plots/heat_gradient.h"
#include "text/number_format.h"

namespace qs::gui {

ExpertErrorMap::ExpertErrorMap(QWidget* parent)
    : PlotView(parent), map_(new QCPColorMap(xAxis, yAxis)), scale_(new QCPColorScale(this)) {
    setTitle(tr("Output error of each expert"));
    setDefaultFileName(QStringLiteral("expert_errors"));
    plotLayout()->addElement(1, 1, scale_);  // beside the axes, under the title row
    auto* margins = new QCPMarginGroup(this);
    axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    scale_->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    scale_->setType(QCPAxis::atRight);
    scale_->axis()->setLabel(tr("relative output error"));
    scale_->setDataScaleType(QCPAxis::stLogarithmic);  // a bad expert is 10x the others, not 10 % more
    scale_->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    scale_->axis()->setNumberFormat(QStringLiteral("gb"));
    map_->setColorScale(scale_);
    map_->setGradient(heatGradient());
    axisRect()->setBackground(QBrush(QColor(150, 150, 150), Qt::BDiagPattern));  // no expert there
    map_->setInterpolate(false);
    xAxis->grid()->setVisible(false);
    yAxis->grid()->setVisible(false);
    yAxis->setRangeReversed(true);  // layer 0 on top, as in the Overview and the tokens per expert
    xAxis->setLabel(tr("expert (click to select its first linear)"));
    yAxis->setLabel(tr("layer"));
    setLayerTicks(xAxis);
    setLayerTicks(yAxis);
    setToolTipProvider([this](double x, double y) { return toolTipAt(x, y); });
    setCsvProvider([this] { return csv(); });
    connect(this, &PlotView::resetViewRequested, this, &ExpertErrorMap::resetView);
    connect(this, &PlotView::clicked, this, [this](double x, double y) {
        int layer = 0, expert = 0;
        if (!cellAt(x, y, layer, expert)) return;
        if (const ExpertError* cell = grid_.cell(layer, expert))
            emit expertClicked(layer, QString::fromStdString(cell->module));
    });
}

void ExpertErrorMap::setGrid(ExpertErrorGrid grid, const QString& method) {
    grid_ = std::move(grid);
    setTitle(method.isEmpty() ? tr("Output error of each expert") : tr("Output error of each expert: %1").arg(method));
    QCPColorMapData* data = map_->data();
    if (grid_.empty()) {
        data->clear();
        replot();
        return;
    }
    data->setSize(grid_.experts(), grid_.layers());
    data->setRange(QCPRange(0, std::max(grid_.experts() - 1, 1)), QCPRange(0, std::max(grid_.layers() - 1, 1)));
    for (int layer = 0; layer < grid_.layers(); ++layer)
        for (int expert = 0; expert < grid_.experts(); ++expert) {
            const ExpertError* cell = grid_.cell(layer, expert);
            data->setCell(expert, layer, cell ? cell->meanError : std::numeric_limits<double>::quiet_NaN());
        }
    // A log scale needs a positive span: one value (or an error of 0) gets a factor of two either side.
    double lo = grid_.minError(), hi = grid_.maxError();
    if (hi <= 0.0) hi = 1.0;
    if (lo <= 0.0) lo = hi * 1e-3;
    if (hi <= lo) {
        lo /= 2.0;
        hi *= 2.0;
    }
    map_->setDataRange(QCPRange(lo, hi));
    resetView();
}

void ExpertErrorMap::resetView() {
    if (grid_.empty()) return;
    xAxis->setRange(-0.5, grid_.experts() - 0.5);
    yAxis->setRange(-0.5, grid_.layers() - 0.5);
    replot();
}

double ExpertErrorMap::cellValue(int layer, int expert) const {
    if (layer < 0 || expert < 0 || layer >= grid_.layers() || expert >= grid_.experts())
        return std::numeric_limits<double>::quiet_NaN();
    return map_->data()->cell(expert, layer);
}

bool ExpertErrorMap::cellAt(double x, double y, int& layer, int& expert) const {
    const long long e = std::llround(x);
    const long long l = std::llround(y);
    if (e < 0 || l < 0 || e >= grid_.experts() || l >= grid_.layers()) return false;
    layer = static_cast<int>(l);
    expert = static_cast<int>(e);
    return true;
}

QString ExpertErrorMap::toolTipAt(double x, double y) const {
    int layer = 0, expert = 0;
    if (!cellAt(x, y, layer, expert)) return {};
    const ExpertError* cell = grid_.cell(layer, expert);
    const QString where = tr("<b>layer %1 · expert %2</b>").arg(layer).arg(expert);
    if (!cell) return where + tr("<br>no output error logged (a dense layer, or no calibration)");
    return where + tr("<br>relative output error %1 (mean of %2 linears), at most %3")
                       .arg(valueText(cell->meanError))
                       .arg(cell->linears)
                       .arg(valueText(cell->maxError));
}

CsvTable ExpertErrorMap::csv() const {
    CsvTable table{{QStringLiteral("layer"), QStringLiteral("expert"), QStringLiteral("mean_output_error"),
                    QStringLiteral("max_output_error"), QStringLiteral("linears")},
                   {}};
    for (int layer = 0; layer < grid_.layers(); ++layer)
        for (int expert = 0; expert < grid_.experts(); ++expert)
            if (const ExpertError* cell = grid_.cell(layer, expert))
                table.rows.append({QString::number(layer), QString::number(expert),
                                   QString::number(cell->meanError, 'g', 9), QString::number(cell->maxError, 'g', 9),
                                   QString::number(cell->linears)});
    return table;
}

}  // namespace qs::gui
