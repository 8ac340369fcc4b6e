#pragma once
// Results: the mean KL divergence of each method against the original, one bar per method on a
// log scale, labelled with the method and its bits per weight.
#include "jobs/quantize_job.h"
#include "plots/plot_view.h"

namespace qs::gui {

class KlPerMethodPlot : public PlotView {
    Q_OBJECT

public:
    explicit KlPerMethodPlot(QWidget* parent = nullptr);

    void setResult(JobResultPtr result);
    int barCount();  // methods drawn (those that ran and were evaluated)

private:
    void drawResult();  // not draw(): QCustomPlot::draw(QCPPainter*) is a virtual of the base
    void resetView();
    QString toolTipAt(double x) const;
    CsvTable csv() const;

    JobResultPtr result_;
};

}  // namespace qs::gui
