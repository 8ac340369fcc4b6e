#pragma once
// Results: a layer × expert heat map of the tokens the router sent each expert during calibration, read
// from the module log rows the job produced (ExpertTokenGrid). Starved experts (a Hessian from fewer
// tokens than the expert has inputs) are outlined. Hover gives layer, expert and tokens; clicking a
// cell asks for the expert's first linear to be selected.
#include "experts/expert_token_grid.h"
#include "jobs/quantize_job.h"
#include "plots/layer_expert_map.h"

namespace qs::gui {

class ExpertHeatMap : public LayerExpertMap {
    Q_OBJECT

public:
    explicit ExpertHeatMap(QWidget* parent = nullptr);

    void setResult(const JobResultPtr& result);
    const ExpertTokenGrid& grid() const { return grid_; }
    bool hasData() const { return !grid_.empty(); }
    int starvedMarks() const { return starvedMarks_; }  // the starved cells' outlines, as drawn
    QString toolTipAt(double x, double y) const;

protected:
    QString moduleAt(int layer, int expert) const override;

private:
    void drawGrid();
    void markStarved();
    CsvTable csv() const;

    ExpertTokenGrid grid_;
    int starvedMarks_ = 0;
};

}  // namespace qs::gui
