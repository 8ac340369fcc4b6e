#include "plots/importance_map.h"

#include <algorithm>
#include <limits>

#include "qs/io/gguf_names.h"
#include "qs/io/tensor_name.h"

#include "text/number_format.h"

namespace qs::gui {

ImportanceMap::ImportanceMap(QWidget* parent)
    : LayerExpertMap(tr("Importance of each linear"), QStringLiteral("imatrix_map"), tr("mean Σx²/count"), parent) {
    colorScale()->setDataScaleType(QCPAxis::stLogarithmic);  // layers' inputs differ by orders of magnitude
    colorScale()->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    colorScale()->axis()->setNumberFormat(QStringLiteral("gb"));
    xAxis->setLabel(tr("linear (click to select it)"));
    xAxis->setTickLabelRotation(45);
    setToolTipProvider([this](double x, double y) { return toolTipAt(x, y); });
    setCsvProvider([this] { return csv(); });
}

void ImportanceMap::setMap(pipeline::ImatrixMap map) {
    map_ = std::move(map);
    auto ticker = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
    for (std::size_t k = 0; k < map_.kinds.size(); ++k)
        ticker->addTick(static_cast<double>(k), QString::fromStdString(map_.kinds[k]));
    xAxis->setTicker(ticker);
    if (map_.cells.empty()) {
        clearCells();
        return;
    }
    // The colour scale spans the positive means (an entry no token reached has 0: no colour).
    double lo = std::numeric_limits<double>::infinity(), hi = 0.0;
    for (const auto& c : map_.cells)
        if (c.meanImportance > 0.0) {
            lo = std::min(lo, c.meanImportance);
            hi = std::max(hi, c.meanImportance);
        }
    if (hi <= 0.0) lo = 0.5, hi = 2.0;
    if (hi <= lo) lo /= 2.0, hi *= 2.0;
    drawCells(
        map_.layers, static_cast<int>(map_.kinds.size()),
        [this](int layer, int kind) {
            const pipeline::ImatrixCell* cell = map_.cellAt(layer, static_cast<std::size_t>(kind));
            return cell && cell->meanImportance > 0.0 ? cell->meanImportance : std::numeric_limits<double>::quiet_NaN();
        },
        QCPRange(lo, hi));
}

QString ImportanceMap::moduleAt(int layer, int kind) const {
    const pipeline::ImatrixCell* cell = map_.cellAt(layer, static_cast<std::size_t>(kind));
    if (!cell) return {};
    const auto hf = io::hfNameOfGgufTensor(cell->entry);
    return hf ? QString::fromStdString(io::parseTensorName(*hf).module) : QString();
}

QString ImportanceMap::toolTipAt(double x, double y) const {
    int layer = 0, kind = 0;
    if (!cellAt(x, y, layer, kind)) return {};
    const pipeline::ImatrixCell* cell = map_.cellAt(layer, static_cast<std::size_t>(kind));
    if (!cell)
        return tr("<b>layer %1 · %2</b><br>no entry in the imatrix")
            .arg(layer)
            .arg(QString::fromStdString(map_.kinds[static_cast<std::size_t>(kind)]));
    const QString experts =
        cell->rows > 1 ? tr(" (over the experts a token reached, of %1)").arg(cell->rows) : QString();
    return tr("<b>%1</b><br>mean Σx²/count %2%3")
        .arg(QString::fromStdString(cell->entry), valueText(cell->meanImportance), experts);
}

CsvTable ImportanceMap::csv() const {
    CsvTable table{{QStringLiteral("entry"), QStringLiteral("layer"), QStringLiteral("kind"),
                    QStringLiteral("mean_importance"), QStringLiteral("rows")},
                   {}};
    for (const auto& c : map_.cells)
        table.rows.append({QString::fromStdString(c.entry), QString::number(c.layer),
                           QString::fromStdString(map_.kinds[c.kind]), QString::number(c.meanImportance, 'g', 9),
                           QString::number(c.rows)});
    return table;
}

}  // namespace qs::gui
