#pragma once
// Results: the KL divergence with only one layer quantized, a line per method across the layers
// (when the job measured it). Clicking near a layer asks for that layer to be selected.
#include "jobs/quantize_job.h"
#include "plots/plot_view.h"

namespace qs::gui {

class KlPerLayerPlot : public PlotView {
    Q_OBJECT

public:
    explicit KlPerLayerPlot(QWidget* parent = nullptr);

    void setResult(JobResultPtr result);
    bool hasData() const { return layers_ > 0; }
    int lineCount() const { return graphCount(); }
    int layerAt(double x) const;  // -1 outside the layers

signals:
    void layerClicked(int layer);

private:
    void drawResult();  // not draw(): QCustomPlot::draw(QCPPainter*) is a virtual of the base
    void resetView();
    QString toolTipAt(double x) const;
    CsvTable csv() const;

    JobResultPtr result_;
    int layers_ = 0;
};

}  // namespace qs::gui
