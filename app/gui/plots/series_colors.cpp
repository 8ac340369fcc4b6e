#include "plots/series_colors.h"

#include <array>

namespace qs::gui {

QColor seriesColor(int index) {
    // Tableau 10: distinct in print and for the common colour-vision deficiencies.
    static const std::array<QColor, 10> kColors{QColor(78, 121, 167),  QColor(242, 142, 43),  QColor(225, 87, 89),
                                                QColor(118, 183, 178), QColor(89, 161, 79),   QColor(237, 201, 72),
                                                QColor(176, 122, 161), QColor(255, 157, 167), QColor(156, 117, 95),
                                                QColor(186, 176, 172)};
    return kColors[static_cast<std::size_t>(index) % kColors.size()];
}

}  // namespace qs::gui
