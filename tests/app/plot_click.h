#pragma once
// A real left click at plot coordinates (x, y), through the plot's own mouse handling.
#include <QCoreApplication>
#include <QMouseEvent>

#include "plots/plot_view.h"

namespace qs::gui::test {

inline void clickPlot(PlotView& plot, double x, double y) {
    const QPointF at(plot.xAxis->coordToPixel(x), plot.yAxis->coordToPixel(y));
    QMouseEvent press(QEvent::MouseButtonPress, at, plot.mapToGlobal(at), Qt::LeftButton, Qt::LeftButton,
                      Qt::NoModifier);
    QMouseEvent release(QEvent::MouseButtonRelease, at, plot.mapToGlobal(at), Qt::LeftButton, Qt::NoButton,
                        Qt::NoModifier);
    QCoreApplication::sendEvent(&plot, &press);
    QCoreApplication::sendEvent(&plot, &release);
}

}  // namespace qs::gui::test
