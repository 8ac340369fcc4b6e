#include "plots/gguf_type_map.h"

#include <limits>

#include "pages/overview_page.h"

namespace qs::gui {

GgufTypeMap::GgufTypeMap(QWidget* parent)
    : LayerExpertMap(tr("ggml types by layer"), QStringLiteral("gguf_types"), tr("bits/weight"), parent) {
    xAxis->setLabel(QString());  // the kinds say it; a line of the page's height saved for the cells
    xAxis->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    xAxis->setTickLabelRotation(-30);
    setToolTipProvider([this](double x, double y) { return toolTipAt(x, y); });
    setCsvProvider([this] { return csv(); });
    // Labels that would not fit their cell (a deep model in a small window) are hidden, not overlapped.
    connect(this, &QCustomPlot::afterLayout, this, &GgufTypeMap::fitLabels);
}

void GgufTypeMap::setGrid(GgufTypeGrid grid) {
    grid_ = std::move(grid);
    drawGrid();
}

void GgufTypeMap::drawGrid() {
    clearItems();
    labels_.clear();
    auto ticker = qSharedPointerCast<QCPAxisTickerText>(xAxis->ticker());
    ticker->clear();
    if (grid_.empty()) {
        clearCells();
        return;
    }
    for (int k = 0; k < grid_.kinds(); ++k) ticker->addTick(k, QString::fromStdString(grid_.kind(k)));
    drawCells(
        grid_.layers(), grid_.kinds(),
        [this](int layer, int kind) {
            const GgufTypeCell* cell = grid_.cell(layer, kind);
            return cell ? cell->bitsPerWeight : std::numeric_limits<double>::quiet_NaN();
        },
        colorScaleRange(grid_.minBits(), grid_.maxBits()));
    QFont font = this->font();
    font.setPointSizeF(font.pointSizeF() * 0.85);
    for (int layer = 0; layer < grid_.layers(); ++layer)
        for (int kind = 0; kind < grid_.kinds(); ++kind) {
            const GgufTypeCell* cell = grid_.cell(layer, kind);
            if (!cell) continue;
            auto* label = new QCPItemText(this);
            label->position->setCoords(kind, layer);
            label->setText(QString::fromStdString(cell->type));
            label->setFont(font);
            // Dark text on the gradient's light (high) end, light text on its dark end.
            const double t =
                (cell->bitsPerWeight - grid_.minBits()) / std::max(grid_.maxBits() - grid_.minBits(), 1e-9);
            label->setColor(grid_.maxBits() > grid_.minBits() && t > 0.6 ? Qt::black : Qt::white);
            label->setClipToAxisRect(true);
            labels_.append(label);
        }
    replot();
}

void GgufTypeMap::fitLabels() {
    if (labels_.isEmpty()) return;
    const double cellWidth = std::abs(xAxis->coordToPixel(1) - xAxis->coordToPixel(0));
    const double cellHeight = std::abs(yAxis->coordToPixel(1) - yAxis->coordToPixel(0));
    const QFontMetrics metrics(labels_.front()->font());
    for (QCPItemText* label : labels_)
        label->setVisible(cellHeight >= metrics.height() && cellWidth >= metrics.horizontalAdvance(label->text()) + 4);
}

int GgufTypeMap::labelsShown() const {
    int shown = 0;
    for (const QCPItemText* label : labels_) shown += label->visible() ? 1 : 0;
    return shown;
}

QString GgufTypeMap::moduleAt(int layer, int kind) const {
    const GgufTypeCell* cell = grid_.cell(layer, kind);
    return cell ? QString::fromStdString(cell->hfName) : QString();
}

QString GgufTypeMap::toolTipAt(double x, double y) const {
    int layer = 0, kind = 0;
    if (!cellAt(x, y, layer, kind)) return {};
    const QString where =
        tr("<b>layer %1 · %2</b>").arg(layer).arg(QString::fromStdString(grid_.kind(kind)).toHtmlEscaped());
    const GgufTypeCell* cell = grid_.cell(layer, kind);
    if (!cell) return where + tr("<br>no such tensor in this layer");
    QString text = where + tr("<br>%1, %2 bits per weight<br>%3")
                               .arg(QString::fromStdString(cell->type))
                               .arg(cell->bitsPerWeight, 0, 'f', 4)
                               .arg(QString::fromStdString(cell->ggufName).toHtmlEscaped());
    if (!cell->hfName.empty())
        text += tr("<br>%1<br><i>click to select it</i>").arg(QString::fromStdString(cell->hfName).toHtmlEscaped());
    return text;
}

CsvTable GgufTypeMap::csv() const {
    CsvTable table{{QStringLiteral("layer"), QStringLiteral("module"), QStringLiteral("type"),
                    QStringLiteral("bits_per_weight"), QStringLiteral("gguf_name"), QStringLiteral("hf_name")},
                   {}};
    for (int layer = 0; layer < grid_.layers(); ++layer)
        for (int kind = 0; kind < grid_.kinds(); ++kind)
            if (const GgufTypeCell* cell = grid_.cell(layer, kind))
                table.rows.append({QString::number(layer), QString::fromStdString(grid_.kind(kind)),
                                   QString::fromStdString(cell->type), QString::number(cell->bitsPerWeight, 'g', 6),
                                   QString::fromStdString(cell->ggufName), QString::fromStdString(cell->hfName)});
    return table;
}

}  // namespace qs::gui
