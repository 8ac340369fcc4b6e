#pragma once
// The layer-overview tab: a heat map of one statistic per decoder layer × linear module, computed
// once per checkpoint on a worker (with progress and cancel). Clicking a cell selects its tensor;
// the selected tensor's cell is outlined. A mixture-of-experts checkpoint gets a module list beside the
// statistic: its dense linears (attention, router, shared expert), or one expert linear as a layer ×
// expert map (hundreds of expert columns side by side would be unreadable); each view is computed
// when first shown.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "qs/analysis/layer_overview.h"

#include "experts/expert_overview_layout.h"
#include "jobs/job_runner.h"
#include "pages/inspector_page.h"
#include "plots/plot_export.h"

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QCPColorMap;
class QCPRange;
class QCPColorScale;
class QCPTextElement;

namespace qs::gui {

class PlotView;

// The colour scale over shown values from `lo` to `hi`: itself, unless all are one value, which gets
// a span a reader can read.
QCPRange colorScaleRange(double lo, double hi);

class OverviewPage : public InspectorPage {
    Q_OBJECT

public:
    explicit OverviewPage(QWidget* parent = nullptr);

    QString title() const override { return tr("Overview"); }
    QString key() const override { return QStringLiteral("overview"); }
    void setCheckpoint(CheckpointPtr checkpoint) override;
    void setTensor(const QString& name) override;
    bool isBusy() const override;

    analysis::LayerStatistic statistic() const;
    // The module list's entries: "dense linears" first, then "experts: gate_proj", ...; only the first
    // for a dense checkpoint (the list is then hidden).
    QStringList moduleViews() const;
    QString moduleView() const;
    bool setModuleView(const QString& view);  // false when there is no such entry
    // Selects the tensor of a cell (as a click does): emits tensorActivated when the cell has one.
    void activateCell(std::size_t layerRow, std::size_t moduleColumn);

    const std::optional<analysis::LayerOverview>& overview() const { return overview_; }
    PlotView* plot() const { return plot_; }

signals:
    void tensorActivated(const QString& name);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void refresh();
    void showModuleView();
    bool showsExperts() const;
    QString columnName(std::size_t column) const;
    void toggleComputation();
    void showProgress(double fraction, const QString& message);
    void setRunning(bool running);
    void draw();
    void drawAxes(const analysis::LayerOverview& overview);
    void highlightCurrent();
    void resetView();
    bool cellAt(double x, double y, std::size_t& row, std::size_t& column) const;
    QString toolTipAt(double x, double y) const;
    CsvTable csv() const;

    CheckpointPtr checkpoint_;
    QString tensor_;
    bool stale_ = false;
    std::optional<analysis::LayerOverview> overview_;  // the view shown
    std::vector<ExpertLinear> expertLinears_;          // the module list's expert entries
    std::string routerModule_;                         // a MoE's router, labelled "router"
    std::map<int, analysis::LayerOverview> computed_;  // by module list index: each view computed once
    JobRunner runner_;

    QComboBox* statistic_;
    QLabel* moduleLabel_;
    QComboBox* module_;
    QProgressBar* progress_;
    QPushButton* computeButton_;
    QLabel* status_;
    PlotView* plot_;
    QCPTextElement* title_;
    QCPColorMap* map_;
    QCPColorScale* scale_;
};

}  // namespace qs::gui
