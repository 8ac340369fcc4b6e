#pragma once
// A layer × expert heat map for the Results page: a colour map with its scale beside the axes, the
// experts along x and layer 0 on top (as in the Overview), hatched where a layer has no such expert.
// A click on a cell asks for the expert's linear that moduleAt names to be selected. ExpertHeatMap (the
// tokens routed to each expert) and ExpertErrorMap (each expert's output error) fill it.
#include <functional>

#include "plots/plot_view.h"

class QCPColorMap;
class QCPColorScale;

namespace qs::gui {

class LayerExpertMap : public PlotView {
    Q_OBJECT

public:
    double cellValue(int layer, int expert) const;  // the colour drawn; NaN where there is none

signals:
    void expertClicked(int layer, const QString& module);

protected:
    LayerExpertMap(const QString& title, const QString& fileName, const QString& scaleLabel, QWidget* parent);

    // `value(layer, expert)` (NaN: no cell) over layers × experts, coloured over `colours`; the view reset.
    void drawCells(int layers, int experts, const std::function<double(int, int)>& value, const QCPRange& colours);
    void clearCells();
    bool cellAt(double x, double y, int& layer, int& expert) const;
    QCPColorScale* colorScale() const { return scale_; }
    // The linear a click on the cell selects ("" when none).
    virtual QString moduleAt(int layer, int expert) const = 0;

private:
    void resetView();

    QCPColorMap* map_;
    QCPColorScale* scale_;
    int layers_ = 0;
    int experts_ = 0;
};

}  // namespace qs::gui
