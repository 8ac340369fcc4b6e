// The heat maps' colour scale: the largest value must not be drawn in the white of an empty page (it
// was: gpThermal ends in white, and gpt-oss's layer-1 router looked like a missing cell), and the
// colours must still brighten monotonically, so that a brighter cell always means a larger value.
#include <gtest/gtest.h>

#include "plots/heat_gradient.h"

namespace {

double luminance(const QColor& c) { return 0.2126 * c.redF() + 0.7152 * c.greenF() + 0.0722 * c.blueF(); }

QColor colourAt(QCPColorGradient gradient, double value) {  // color() is not const: it caches a table
    return QColor::fromRgb(gradient.color(value, QCPRange(0.0, 1.0)));
}

TEST(HeatGradient, TheLargestValueIsASaturatedColourNotWhite) {
    const QColor top = colourAt(qs::gui::heatGradient(), 1.0);
    EXPECT_GT(top.hsvSaturation(), 200) << top.name().toStdString();
    EXPECT_LT(top.blue(), 100) << top.name().toStdString();
    // What it replaced: QCustomPlot's own thermal scale ends in white.
    EXPECT_EQ(colourAt(QCPColorGradient(QCPColorGradient::gpThermal), 1.0), QColor(Qt::white));
}

TEST(HeatGradient, BrighterMeansLarger) {
    QCPColorGradient gradient = qs::gui::heatGradient();
    double previous = -1.0;
    for (int i = 0; i <= 100; ++i) {
        const double l = luminance(colourAt(gradient, i / 100.0));
        EXPECT_GE(l, previous - 1e-3) << "at " << i / 100.0;
        previous = l;
    }
    EXPECT_LT(luminance(colourAt(gradient, 0.0)), 0.1);  // the smallest is dark
}

TEST(HeatGradient, NoValueIsTransparent) {
    EXPECT_EQ(qs::gui::heatGradient().nanHandling(), QCPColorGradient::nhTransparent);
}

}  // namespace
