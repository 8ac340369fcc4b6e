#pragma once
// Results: a layer × expert heat map of one method's damage to each expert (ExpertErrorGrid: the mean
// relative output error of its linears on the calibration), on a logarithmic colour scale, beside the
// tokens the router sent each (ExpertHeatMap): an expert the calibration starved is often the one
// quantized worst. Hover gives layer, expert and the errors; clicking a cell asks for the expert's first
// linear to be selected.
#include "experts/expert_error_grid.h"
#include "plots/plot_view.h"

class QCPColorMap;
class QCPColorScale;

namespace qs::gui {

class ExpertErrorMap : public PlotView {
    Q_OBJECT

public:
    explicit ExpertErrorMap(QWidget* parent = nullptr);

    // `method`: the label the title names.
    void setGrid(ExpertErrorGrid grid, const QString& method);
    const ExpertErrorGrid& grid() const { return grid_; }
    double cellValue(int layer, int expert) const;  // the colour drawn (NaN where there is none)
    QString toolTipAt(double x, double y) const;

signals:
    void expertClicked(int layer, const QString& module);

private:
    void resetView();
    bool cellAt(double x, double y, int& layer, int& expert) const;
    CsvTable csv() const;

    ExpertErrorGrid grid_;
    QCPColorMap* map_;
    QCPColorScale* scale_;
};

}  // namespace qs::gui
