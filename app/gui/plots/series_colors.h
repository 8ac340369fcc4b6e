#pragma once
// One colour per method, the same in every results plot, so a method is recognised across them.
#include <QColor>

namespace qs::gui {

QColor seriesColor(int index);

}  // namespace qs::gui
