#include "plots/expert_error_map.h"

#include <cmath>
#include <limits>

#include "text/number_format.h"

namespace qs::gui {

ExpertErrorMap::ExpertErrorMap(QWidget* parent)
    : LayerExpertMap(tr("Output error of each expert"), QStringLiteral("expert_errors"), tr("relative output error"),
                     parent) {
    colorScale()->setDataScaleType(QCPAxis::stLogarithmic);  // a bad expert is 10x the others, not 10 % more
    colorScale()->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    colorScale()->axis()->setNumberFormat(QStringLiteral("gb"));
    setToolTipProvider([this](double x, double y) { return toolTipAt(x, y); });
    setCsvProvider([this] { return csv(); });
}

void ExpertErrorMap::setGrid(ExpertErrorGrid grid, const QString& method) {
    grid_ = std::move(grid);
    setTitle(method.isEmpty() ? tr("Output error of each expert") : tr("Output error of each expert: %1").arg(method));
    if (grid_.empty()) {
        clearCells();
        return;
    }
    // A log scale needs a positive span: one value (or an error of 0) gets a factor of two either side.
    double lo = grid_.minError(), hi = grid_.maxError();
    if (hi <= 0.0) hi = 1.0;
    if (lo <= 0.0) lo = hi * 1e-3;
    if (hi <= lo) {
        lo /= 2.0;
        hi *= 2.0;
    }
    drawCells(
        grid_.layers(), grid_.experts(),
        [this](int layer, int expert) {
            const ExpertError* cell = grid_.cell(layer, expert);
            return cell ? cell->meanError : std::numeric_limits<double>::quiet_NaN();
        },
        QCPRange(lo, hi));
}

QString ExpertErrorMap::moduleAt(int layer, int expert) const {
    const ExpertError* cell = grid_.cell(layer, expert);
    return cell ? QString::fromStdString(cell->module) : QString();
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
