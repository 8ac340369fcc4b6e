#include "plots/expert_heat_map.h"

#include <cmath>
#include <limits>

#include "pages/overview_page.h"

namespace qs::gui {
namespace {

const QColor kStarvedOutline(0, 200, 255);  // stands out on every colour of the thermal gradient

}  // namespace

ExpertHeatMap::ExpertHeatMap(QWidget* parent)
    : LayerExpertMap(tr("Calibration tokens routed to each expert"), QStringLiteral("expert_tokens"),
                     tr("tokens routed"), parent) {
    setToolTipProvider([this](double x, double y) { return toolTipAt(x, y); });
    setCsvProvider([this] { return csv(); });
}

void ExpertHeatMap::setResult(const JobResultPtr& result) {
    grid_ = result ? ExpertTokenGrid::fromResult(*result) : ExpertTokenGrid();
    drawGrid();
}

void ExpertHeatMap::drawGrid() {
    clearItems();
    starvedMarks_ = 0;
    if (grid_.empty()) {
        clearCells();
        return;
    }
    drawCells(
        grid_.layers(), grid_.experts(),
        [this](int layer, int expert) {
            const ExpertTokens* cell = grid_.cell(layer, expert);
            return cell ? static_cast<double>(cell->routedTokens) : std::numeric_limits<double>::quiet_NaN();
        },
        colorScaleRange(static_cast<double>(grid_.minTokens()), static_cast<double>(grid_.maxTokens())));
    markStarved();
    replot();
}

void ExpertHeatMap::markStarved() {
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

QString ExpertHeatMap::moduleAt(int layer, int expert) const {
    const ExpertTokens* cell = grid_.cell(layer, expert);
    return cell ? QString::fromStdString(cell->module) : QString();
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
