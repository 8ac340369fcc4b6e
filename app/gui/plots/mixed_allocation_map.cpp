#include "plots/mixed_allocation_map.h"

#include <algorithm>

#include <QFontMetrics>
#include <QPainter>

#include "plots/series_colors.h"

namespace qs::gui {
namespace {

constexpr int kMargin = 6;
constexpr int kSwatch = 12;

QColor denseColor() { return QColor(0xd0, 0xd0, 0xd0); }

}  // namespace

MixedAllocationMap::MixedAllocationMap(QWidget* parent) : QWidget(parent) {
    setAttribute(Qt::WA_OpaquePaintEvent);
    setToolTip(tr("The method of every linear at the chosen budget (grey: kept dense)"));
}

void MixedAllocationMap::setAllocation(const pipeline::MixedMethods& mix, const std::vector<std::string>& methods) {
    methods_.clear();
    for (const auto& m : methods) methods_ << QString::fromStdString(m);
    cells_.assign(mix.layers.size(), {});
    for (std::size_t l = 0; l < mix.layers.size(); ++l)
        for (std::size_t k = 0; k < kModules; ++k) {
            const pipeline::MethodSpec* m = mix.methodOf(int(l), model::LayerWeights::kLinearModules[k]);
            if (!m) {
                cells_[l][k] = -1;
                continue;
            }
            const QString name = QString::fromStdString(m->name);
            qsizetype i = methods_.indexOf(name);
            if (i < 0) {
                methods_ << name;
                i = methods_.size() - 1;
            }
            cells_[l][k] = int(i);
        }
    fitLegend();
    update();
}

// The legend's entries (a swatch and a name per method, then dense) from the left edge, wrapped into
// rows that fit `width`; y from the legend's top.
std::vector<QRect> MixedAllocationMap::legendLayout(int width) const {
    const QFontMetrics fm(font());
    QStringList names = methods_;
    names << tr("dense");
    std::vector<QRect> entries;
    int x = kMargin, y = 0;
    for (const QString& name : names) {
        const int w = kSwatch + 4 + fm.horizontalAdvance(name);
        if (x > kMargin && x + w > width - kMargin) x = kMargin, y += fm.height() + kMargin;
        entries.emplace_back(x, y, w, fm.height());
        x += w + 3 * kMargin;
    }
    return entries;
}

int MixedAllocationMap::legendHeight(int width) const { return legendLayout(width).back().bottom() + 1 + 2 * kMargin; }

std::vector<QRect> MixedAllocationMap::legendRects() const {
    std::vector<QRect> entries = legendLayout(width());
    for (QRect& r : entries) r.translate(0, height() - legendHeight(width()) + kMargin);
    return entries;
}

// A legend that wraps into another row asks the layout for the height.
void MixedAllocationMap::fitLegend() {
    const int h = legendHeight(width() > 0 ? width() : minimumWidth());
    if (h != fittedLegendHeight_) {
        fittedLegendHeight_ = h;
        updateGeometry();
    }
}

void MixedAllocationMap::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    fitLegend();
}

void MixedAllocationMap::clear() {
    cells_.clear();
    update();
}

QString MixedAllocationMap::methodAt(int layer, std::string_view module) const {
    if (layer < 0 || layer >= layerCount()) return {};
    const auto& modules = model::LayerWeights::kLinearModules;
    const auto it = std::find(modules.begin(), modules.end(), module);
    if (it == modules.end()) return {};
    const int i = cells_[std::size_t(layer)][std::size_t(it - modules.begin())];
    return i < 0 ? QString() : methods_[i];
}

// Seven rows of labels that do not overlap, the layer numbers and the legend.
QSize MixedAllocationMap::minimumSizeHint() const {
    const QFontMetrics fm(font());
    return {240,
            int(kModules) * (fm.height() + 1) + fm.height() + 2 * kMargin + legendHeight(width() > 0 ? width() : 240)};
}
// Taller only stretches the cells: the plot above it takes the room a window can spare.
QSize MixedAllocationMap::sizeHint() const { return {640, minimumSizeHint().height()}; }

void MixedAllocationMap::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    const QFontMetrics fm(font());
    const int rowHeightText = fm.height();
    int labelWidth = 0;
    for (auto module : model::LayerWeights::kLinearModules)
        labelWidth =
            std::max(labelWidth, fm.horizontalAdvance(QString::fromLatin1(module.data(), qsizetype(module.size()))));
    const int legend = legendHeight(width());
    const QRect grid(kMargin + labelWidth + kMargin, kMargin, width() - labelWidth - 3 * kMargin,
                     height() - legend - rowHeightText - 2 * kMargin);
    p.setPen(palette().text().color());
    if (cells_.empty() || grid.width() <= 0 || grid.height() <= 0) {
        p.drawText(rect().adjusted(kMargin, kMargin, -kMargin, -kMargin), Qt::AlignCenter | Qt::TextWordWrap,
                   tr("Measure, then move the budget: the allocation shows here"));
        return;
    }
    const double cw = double(grid.width()) / double(cells_.size());
    const double ch = double(grid.height()) / double(kModules);
    for (std::size_t k = 0; k < kModules; ++k) {
        const auto module = model::LayerWeights::kLinearModules[k];
        const QRectF label(kMargin, grid.top() + ch * double(k), labelWidth, ch);
        p.drawText(label, Qt::AlignRight | Qt::AlignVCenter,
                   QString::fromLatin1(module.data(), qsizetype(module.size())));
        for (std::size_t l = 0; l < cells_.size(); ++l) {
            const int i = cells_[l][k];
            const QRectF cell(grid.left() + cw * double(l), grid.top() + ch * double(k), cw, ch);
            p.fillRect(cell.adjusted(0, 0, -1, -1), i < 0 ? denseColor() : seriesColor(i));
        }
    }
    // Layer numbers under the grid, as many as fit.
    const int every = std::max(1, int(std::ceil(double(fm.horizontalAdvance(QStringLiteral("00 "))) / cw)));
    for (std::size_t l = 0; l < cells_.size(); l += std::size_t(every))
        p.drawText(QRectF(grid.left() + cw * double(l), grid.bottom() + 2, cw * every, rowHeightText),
                   Qt::AlignLeft | Qt::AlignTop, QString::number(l));
    // The legend: a swatch and a name per method, then dense, in as many rows as the width needs.
    const std::vector<QRect> entries = legendRects();
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const QRect& r = entries[i];
        p.fillRect(QRect(r.left(), r.top() + (rowHeightText - kSwatch) / 2, kSwatch, kSwatch),
                   qsizetype(i) < methods_.size() ? seriesColor(int(i)) : denseColor());
        p.drawText(QPoint(r.left() + kSwatch + 4, r.top() + fm.ascent()),
                   qsizetype(i) < methods_.size() ? methods_[qsizetype(i)] : tr("dense"));
    }
}

}  // namespace qs::gui
