#pragma once
// Results: a layer × expert heat map of the tokens the router sent each expert during calibration, read
// from the module log rows the job produced (ExpertTokenGrid). Starved experts (a Hessian from fewer
// tokens than the expert has inputs) are outlined. Hover gives layer, expert and tokens; clicking a
// cell asks for the expert's first linear to be selected.
#include "experts/expert_token_grid.h"
#include "jobs/quantize_job.h"
#include "plots/plot_view.h"

class QCPColorMap;
class QCPColorScale;

namespace qs::gui {

class ExpertHeatMap : public PlotView {
    Q_OBJECT

public:
    explicit ExpertHeatMap(QWidget* parent = nullptr);

    void setResult(const JobResultPtr& result);
    const ExpertTokenGrid& grid() const { return grid_; }
    bool hasData() const { return !grid_.empty(); }
    // The colour drawn for a cell (NaN where there is none) and the starved cells' outlines, as drawn.
    double cellValue(int layer, int expert) const;
    int starvedMarks() const { return starvedMarks_; }
    QString toolTipAt(double x, double y) const;

signals:
    void expertClicked(int layer, const QString& module);

private:
    void drawGrid();
    void markStarved();
    void resetView();
    bool cellAt(double x, double y, int& layer, int& expert) const;
    CsvTable csv() const;

    ExpertTokenGrid grid_;
    QCPColorMap* map_;
    QCPColorScale* scale_;
    int starvedMarks_ = 0;
};

}  // namespace qs::gui
