#include "plots/heat_gradient.h"

namespace qs::gui {

QCPColorGradient heatGradient() {
    // gpThermal's stops below its white one (dark blue, purple, orange, yellow), spread over the whole
    // range: the colours still brighten with the value, and the largest is a saturated yellow.
    const QMap<double, QColor> thermal = QCPColorGradient(QCPColorGradient::gpThermal).colorStops();
    const double top = 0.85;  // gpThermal's yellow
    QMap<double, QColor> stops;
    for (auto it = thermal.cbegin(); it != thermal.cend() && it.key() <= top; ++it)
        stops.insert(it.key() / top, it.value());
    QCPColorGradient gradient;
    gradient.setColorStops(stops);
    gradient.setNanHandling(QCPColorGradient::nhTransparent);
    return gradient;
}

}  // namespace qs::gui
