#pragma once
// Results: a layer × expert heat map of one method's damage to each expert (ExpertErrorGrid: the mean
// relative output error of its linears on the calibration), on a logarithmic colour scale, beside the
// tokens the router sent each (ExpertHeatMap): an expert the calibration starved is often the one
// quantized worst. Hover gives layer, expert and the errors; clicking a cell asks for the expert's first
// linear to be selected.
#include "experts/expert_error_grid.h"
#include "plots/layer_expert_map.h"

namespace qs::gui {

class ExpertErrorMap : public LayerExpertMap {
    Q_OBJECT

public:
    explicit ExpertErrorMap(QWidget* parent = nullptr);

    // `method`: the label the title names.
    void setGrid(ExpertErrorGrid grid, const QString& method);
    const ExpertErrorGrid& grid() const { return grid_; }
    QString toolTipAt(double x, double y) const;

protected:
    QString moduleAt(int layer, int expert) const override;

private:
    CsvTable csv() const;

    ExpertErrorGrid grid_;
};

}  // namespace qs::gui
