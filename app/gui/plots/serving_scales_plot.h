#pragma once
// The activation and KV-cache scales a checkpoint stores (formats::readServingScales), per decoder
// layer on a log axis: one series per linear's input_scale (or input global scale), one for k_scale
// and one for v_scale. A layer whose inputs are far larger than its neighbours' stands out at a glance.
#include <vector>

#include "qs/formats/serving_quantization.h"

#include "plots/plot_view.h"

namespace qs::gui {

class ServingScalesPlot : public PlotView {
    Q_OBJECT

public:
    explicit ServingScalesPlot(QWidget* parent = nullptr);

    void setScales(std::vector<formats::ServingScale> scales);
    const std::vector<formats::ServingScale>& scales() const { return scales_; }

private:
    void draw();
    void resetView();
    QString toolTipAt(double x) const;
    CsvTable csv() const;

    std::vector<formats::ServingScale> scales_;
    int layers_ = 0;
};

// The series a scale belongs to: "q_proj input", "k_scale", ... (the tensor name's module and kind).
QString servingScaleSeries(const formats::ServingScale& scale);

}  // namespace qs::gui
