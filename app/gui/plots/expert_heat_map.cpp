#include "plots/expert_heat_map.h"

#include <cmath>
#include <limits>

#include "pages/overview_page.h"
#include "plots/heat_gradient.h"

namespace qs::gui {
namespace {

const QColor kStarvedOutline(0, 200, 255);  // stands out on every colour of the thermal gradient

}  // namespace

ExpertHeatMap::ExpertHeatMap(QWidget* parent)
    : PlotView(parent), map_(new QCPColorMap(xAxis, yAxis)), scale_(new QCPColorScale(this)) {
    setTitle(tr("Calibration tokens routed to each expert"));
    setDefaultFileName(QStringLiteral("expert_tokens"));
    plotLayout()->addElement(1, 1, scale_);  // beside the axes, under the title row
    auto* margins = new QCPMarginGroup(this);
    axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    scale_->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
    scale_->setType(QCPAxis::atRight);
    scale_->axis()->setLabel(tr("tokens routed"));
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
    setToolTipProvider([this](double x, double y) { return toolTipAt(x, y); });
    setCsvProvider([this] { return csv(); });
    connect(this, &PlotView::resetViewRequested, this, &ExpertHeatMap::resetView);
    connect(this, &PlotView::clicked, this, [this](double x, double y) {
        int layer = 0, expert = 0;
        if (!cellAt(x, y, layer, expert)) return;
        if (const ExpertTokens* cell = grid_.cell(layer, expert))
            emit expertClicked(layer, QString::fromStdString(cell->module));
    });
}

void ExpertHeatMap::setResult(const JobResultPtr& result) {
    grid_ = result ? ExpertTokenGrid::fromResult(*result) : ExpertTokenGrid();
    drawGrid();
}

void ExpertHeatMap::drawGrid() {
    QCPColorMapData* data = map_->data();
    if (grid_.empty()) {
        data->clear();
        clearItems();
        starvedMarks_ = 0;
        replot();
        return;
    }
    data->setSize(grid_.experts(), grid_.layers());
    data->setRange(QCPRange(0, std::max(grid_.experts() - 1, 1)), QCPRange(0, std::max(grid_.layers() - 1, 1)));
    for (int layer = 0; layer < grid_.layers(); ++layer)
        for (int expert = 0; expert < grid_.experts(); ++expert) {
            const ExpertTokens* cell = grid_.cell(layer, expert);
            data->setCell(expert, layer,
                          cell ? static_cast<double>(cell->routedTokens) : std::numeric_limits<double>::quiet_NaN());
        }
    map_->setDataRange(colorScaleRange(static_cast<double>(grid_.minTokens()), static_cast<double>(grid_.maxTokens())));
    markStarved();
    resetView();
}

void ExpertHeatMap::markStarved() {
    clearItems();
    starvedMarks_ = 0;
    for (int layer = 0; layer < grid_.layers(); ++layer)
        for (int expert = 0; expert < grid_.experts(); ++expert) {
            const ExpertTokens* cell = grid_.cell(layer, expert);
            if (!cell || !cell->starved) continue;
            auto* box = new QCPItemRect(this);
            box->topLeft->setCoords(expert - 0.5, layer - 0.5);
            box->bottomRight->setCoords(expert + 0.5, layer + 0.5);
            box->setPen(QPen(kStarvedOutline, 2.5));
            box->setBrush(Qt::NoBrush);
            ++starvedMarks_;
        }
}

void ExpertHeatMap::resetView() {
    if (grid_.empty()) return;
    xAxis->setRange(-0.5, grid_.experts() - 0.5);
    yAxis->setRange(-0.5, grid_.layers() - 0.5);
    replot();
}

double ExpertHeatMap::cellValue(int layer, int expert) const {
    if (layer < 0 || expert < 0 || layer >= grid_.layers() || expert >= grid_.experts())
        return std::numeric_limits<double>::quiet_NaN();
    return map_->data()->cell(expert, layer);
}

bool ExpertHeatMap::cellAt(double x, double y, int& layer, int& expert) const {
    const long long e = std::llround(x);
    const long long l = std::llround(y);
    if (e < 0 || l < 0 || e >= grid_.experts() || l >= grid_.layers()) return false;
    layer = static_cast<int>(l);
    expert = static_cast<int>(e);
    return true;
}

QString ExpertHeatMap::toolTipAt(double x, double y) const {
    int layer = 0, expert = 0;
    if (!cellAt(x, y, layer, expert)) return {};
    const ExpertTokens* cell = grid_.cell(layer, expert);
    const QString where = tr("<b>layer %1 · expert %2</b>").arg(layer).arg(expert);
    if (!cell) return where + tr("<br>no expert in the log (a dense layer)");
    QString text = where + tr("<br>%n token(s) routed", nullptr, static_cast<int>(cell->routedTokens));
    if (cell->starved)
        text += tr("<br><b>starved</b>: its Hessian came from %1 tokens for %2 inputs; GPTQ works mostly from the "
                   "damping. Calibrate every expert on every token, or give it more text.")
                    .arg(cell->samples)
                    .arg(cell->inFeatures);
    return text;
}

CsvTable ExpertHeatMap::csv() const {
    CsvTable table{{QStringLiteral("layer"), QStringLiteral("expert"), QStringLiteral("routed_tokens"),
                    QStringLiteral("samples"), QStringLiteral("in_features"), QStringLiteral("starved")},
                   {}};
    for (int layer = 0; layer < grid_.layers(); ++layer)
        for (int expert = 0; expert < grid_.experts(); ++expert)
            if (const ExpertTokens* cell = grid_.cell(layer, expert))
                table.rows.append({QString::number(layer), QString::number(expert), QString::number(cell->routedTokens),
                                   QString::number(cell->samples), QString::number(cell->inFeatures),
                                   cell->starved ? QStringLiteral("1") : QStringLiteral("0")});
    return table;
}

}  // namespace qs::gui
