#pragma once
// Results: each quantized linear's relative output error on the calibration inputs, a line per
// method across the linears (by layer, then module name). Clicking a point asks for that linear to be selected.
#include <string>
#include <utility>
#include <vector>

#include "jobs/quantize_job.h"
#include "plots/plot_view.h"

namespace qs::gui {

class OutputErrorPlot : public PlotView {
    Q_OBJECT

public:
    struct Linear {
        int layer = 0;
        std::string module;
        auto operator<=>(const Linear&) const = default;
    };

    explicit OutputErrorPlot(QWidget* parent = nullptr);

    void setResult(JobResultPtr result);
    const std::vector<Linear>& linears() const { return linears_; }
    int linearAt(double x) const;  // index into linears(), -1 outside

signals:
    void linearClicked(int layer, const QString& module);

private:
    void drawResult();  // not draw(): QCustomPlot::draw(QCPPainter*) is a virtual of the base
    void drawMethod(const pipeline::MethodResult& m, int index);
    void resetView();
    QString toolTipAt(double x) const;
    CsvTable csv() const;
    double errorOf(const pipeline::MethodResult& m, const Linear& linear) const;

    JobResultPtr result_;
    std::vector<Linear> linears_;  // every (layer, module) any method logged, sorted
};

}  // namespace qs::gui
