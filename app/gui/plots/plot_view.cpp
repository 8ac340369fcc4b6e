#include "plots/plot_view.h"

#include <algorithm>
#include <cmath>

#include <QContextMenuEvent>
#include <QFileDialog>
#include <QMenu>
#include <QMouseEvent>
#include <QToolTip>

namespace qs::gui {
namespace {

constexpr int kClickSlopPixels = 4;  // a press and release closer than this is a click, not a drag

}  // namespace

PlotView::PlotView(QWidget* parent) : QCustomPlot(parent), menu_(new QMenu(this)) {
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    setMouseTracking(true);
    setMinimumSize(320, 220);
    menu_->addAction(tr("Reset view"), this, &PlotView::resetViewRequested);
    menu_->addSeparator();
    menu_->addAction(tr("Export PNG…"), this, [this] { exportWithDialog(ExportFormat::Png); });
    menu_->addAction(tr("Export PDF…"), this, [this] { exportWithDialog(ExportFormat::Pdf); });
    menu_->addAction(tr("Export CSV…"), this, [this] { exportWithDialog(ExportFormat::Csv); });
}

void PlotView::setTitle(const QString& title, Qt::TextElideMode elide) {
    if (!title_) {
        plotLayout()->insertRow(0);
        title_ = new QCPTextElement(this, QString(), QFont(font().family(), 10, QFont::Bold));
        plotLayout()->addElement(0, 0, title_);
    }
    fullTitle_ = title;
    titleElide_ = elide;
    fitTitle();
}

void PlotView::fitTitle() {
    if (!title_) return;
    const QFontMetrics metrics(title_->font());
    title_->setText(metrics.elidedText(fullTitle_, titleElide_, std::max(width() - 16, 40)));
}

void PlotView::resizeEvent(QResizeEvent* event) {
    fitTitle();
    QCustomPlot::resizeEvent(event);
}

void PlotView::setLayerTicks(QCPAxis* axis) {
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(1.0);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    axis->setTicker(ticker);
}

void PlotView::setLogValueAxis() {
    yAxis->setScaleType(QCPAxis::stLogarithmic);
    yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    if (!followsLogRange_) {  // once: toggling the scale back and forth must not pile up connections
        followsLogRange_ = true;
        connect(yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &PlotView::labelLogRange);
    }
    labelLogRange(yAxis->range());
}

void PlotView::setLinearValueAxis() {
    yAxis->setScaleType(QCPAxis::stLinear);
    yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    yAxis->setNumberFormat(QStringLiteral("gb"));
    yAxis->setNumberPrecision(6);  // significant digits at most: ticks are round numbers
}

namespace {

// 1, 2 and 5 times the powers of ten inside `range` (lower > 0), labelled as plain numbers.
QSharedPointer<QCPAxisTickerText> oneTwoFiveTicks(const QCPRange& range) {
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (double decade = std::pow(10.0, std::floor(std::log10(range.lower))); decade <= range.upper; decade *= 10.0)
        for (const double mantissa : {1.0, 2.0, 5.0}) {
            const double v = mantissa * decade;
            if (v >= range.lower && v <= range.upper) ticker->addTick(v, QString::number(v, 'g', 6));
        }
    return ticker;
}

}  // namespace

// Powers of ten over two decades or more, else plain numbers at 1, 2 and 5 times them (the log
// ticker's every mantissa, 0.002 to 0.006, crowded the top of a small plot); never "1.000000·10³".
void PlotView::labelLogRange(const QCPRange& range) {
    if (yAxis->scaleType() != QCPAxis::stLogarithmic) return;
    const bool decades = range.lower > 0 && range.upper / range.lower >= 100.0;
    yAxis->setNumberFormat(decades ? QStringLiteral("eb") : QStringLiteral("g"));
    yAxis->setNumberPrecision(decades ? 0 : 6);
    if (decades || range.lower <= 0) {
        if (!yAxis->ticker().dynamicCast<QCPAxisTickerLog>())
            yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    } else {
        yAxis->setTicker(oneTwoFiveTicks(range));
    }
}

void PlotView::placeLegendBelow() {
    // In its own row under the axes, its entries side by side: it never hides the data it names.
    axisRect()->insetLayout()->take(legend);
    auto* row = new QCPLayoutGrid;
    plotLayout()->addElement(plotLayout()->rowCount(), 0, row);
    row->addElement(0, 0, legend);
    row->setMargins(QMargins(0, 0, 0, 4));
    plotLayout()->setRowStretchFactor(plotLayout()->rowCount() - 1, 0.001);
    legend->setFillOrder(QCPLegend::foColumnsFirst);
    // As many entries to a row as the plot's width holds without cutting a name.
    connect(this, &QCustomPlot::beforeReplot, this, [this] {
        int widest = 1;
        for (int i = 0; i < legend->itemCount(); ++i)  // a wrapped grid has empty cells: null items
            if (const QCPAbstractLegendItem* item = legend->item(i))
                widest = std::max(widest, item->minimumOuterSizeHint().width());
        const int columns = std::max(1, (width() - 24) / (widest + legend->columnSpacing()));
        if (legend->wrap() == columns) return;
        legend->setWrap(columns);
        legend->setFillOrder(legend->fillOrder(), true);  // re-places the entries already in the grid
    });
    legend->setVisible(true);
    legend->setFont(QFont(font().family(), 8));
    legend->setBorderPen(Qt::NoPen);
}

void PlotView::fitLogValueAxis(double lowerWhenEmpty) {
    QCPRange all;
    bool found = false;
    for (int g = 0; g < graphCount(); ++g) {
        bool ok = false;
        const QCPRange r = graph(g)->getValueRange(ok);
        if (!ok) continue;
        all = found ? QCPRange(std::min(all.lower, r.lower), std::max(all.upper, r.upper)) : r;
        found = true;
    }
    if (found)
        yAxis->setRange(all.lower / 3.0, all.upper * 3.0);
    else
        yAxis->setRange(lowerWhenEmpty, 1.0);
}

void PlotView::exportTo(ExportFormat format, const QString& path) {
    QString error;
    if (format == ExportFormat::Csv) {
        error = csv_ ? writeCsv(path, csv_()) : tr("This plot has no data to export");
    } else {
        error = savePlotImage(*this, path, format);
    }
    if (!error.isEmpty()) emit exportFailed(error);
}

void PlotView::exportWithDialog(ExportFormat format) {
    const QString suffix = exportFormatSuffix(format);
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export %1").arg(suffix.toUpper()), baseName_ + QLatin1Char('.') + suffix, exportFormatFilter(format));
    if (!path.isEmpty()) exportTo(format, path);
}

void PlotView::mousePressEvent(QMouseEvent* event) {
    pressPos_ = event->pos();
    QCustomPlot::mousePressEvent(event);
}

void PlotView::mouseReleaseEvent(QMouseEvent* event) {
    QCustomPlot::mouseReleaseEvent(event);
    if (event->button() == Qt::LeftButton && (event->pos() - pressPos_).manhattanLength() < kClickSlopPixels) {
        emit clicked(xAxis->pixelToCoord(event->pos().x()), yAxis->pixelToCoord(event->pos().y()));
    }
}

void PlotView::mouseMoveEvent(QMouseEvent* event) {
    QCustomPlot::mouseMoveEvent(event);
    if (!toolTip_ || event->buttons() != Qt::NoButton) return;
    if (!axisRect()->rect().contains(event->pos())) {
        QToolTip::hideText();
        return;
    }
    const QString text = toolTip_(xAxis->pixelToCoord(event->pos().x()), yAxis->pixelToCoord(event->pos().y()));
    if (text.isEmpty()) {
        QToolTip::hideText();
    } else {
        QToolTip::showText(event->globalPosition().toPoint(), text, this);
    }
}

void PlotView::contextMenuEvent(QContextMenuEvent* event) { menu_->popup(event->globalPos()); }

}  // namespace qs::gui
