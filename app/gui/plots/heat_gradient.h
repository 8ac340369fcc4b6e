#pragma once
// The colour scale of the heat maps (the Overview's layer × module grid, the tokens routed to each
// expert): QCustomPlot's thermal gradient, stopped at a saturated yellow. Its own top is white, which
// on a white page reads as an empty cell exactly where the largest value is.
#include <qcustomplot.h>

namespace qs::gui {

QCPColorGradient heatGradient();  // NaN (no value: a dense layer's expert cell) is transparent

}  // namespace qs::gui
