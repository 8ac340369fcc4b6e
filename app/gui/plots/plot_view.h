#pragma once
// PlotView: the QCustomPlot every page draws into, with what all plots share: zoom and pan, a
// tooltip with the exact value under the mouse, clicks, and export (context menu or exportMenu()).
#include <functional>

#include <QPoint>
#include <qcustomplot.h>

#include "plots/plot_export.h"

class QMenu;

namespace qs::gui {

class PlotView : public QCustomPlot {
    Q_OBJECT

public:
    using ToolTipProvider = std::function<QString(double x, double y)>;  // plot coordinates; "" for none
    using CsvProvider = std::function<CsvTable()>;

    explicit PlotView(QWidget* parent = nullptr);

    void setToolTipProvider(ToolTipProvider provider) { toolTip_ = std::move(provider); }
    void setCsvProvider(CsvProvider provider) { csv_ = std::move(provider); }
    void setDefaultFileName(const QString& baseName) { baseName_ = baseName; }
    // A bold title row above the axes, made on first use; elided to the plot's width (a tensor name is
    // longer than a third of a laptop's centre) on the side `elide` says; title() is the whole of it.
    void setTitle(const QString& title, Qt::TextElideMode elide = Qt::ElideMiddle);
    const QString& title() const { return title_ ? fullTitle_ : emptyTitle_; }
    // A logarithmic value axis whose labels follow its range: powers of ten ("10⁻³") over two decades
    // or more, plain numbers ("3", "0.5") over a narrower range, where the log ticker's steps within a
    // decade would otherwise read "3·10⁰".
    void setLogValueAxis();
    void setLinearValueAxis();
    // An axis of decoder layers: a tick per whole layer, thinned to multiples on deep models.
    static void setLayerTicks(QCPAxis* axis);
    // The legend in a row of its own below the axes (made visible), instead of over the data.
    void placeLegendBelow();
    // The actions of the context menu, for a page's toolbar button; owned by this view.
    QMenu* exportMenu() const { return menu_; }
    void exportTo(ExportFormat format, const QString& path);  // without a dialog (tests, scripts)

signals:
    void clicked(double x, double y);  // a left click that did not drag
    void resetViewRequested();         // the page knows its natural ranges
    void exportFailed(const QString& message);

protected:
    // The value axis (logarithmic) over every graph's data with a factor 3 of margin either side;
    // [lowerWhenEmpty, 1] when no graph has data.
    void fitLogValueAxis(double lowerWhenEmpty);

    void mousePressEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void fitTitle();
    void exportWithDialog(ExportFormat format);
    void labelLogRange(const QCPRange& range);

    ToolTipProvider toolTip_;
    CsvProvider csv_;
    QString baseName_ = QStringLiteral("plot");
    QMenu* menu_ = nullptr;
    QCPTextElement* title_ = nullptr;
    QString fullTitle_;
    Qt::TextElideMode titleElide_ = Qt::ElideMiddle;
    inline static const QString emptyTitle_;
    QPoint pressPos_;
    bool followsLogRange_ = false;
};

}  // namespace qs::gui
