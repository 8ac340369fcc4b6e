#pragma once
// The Mixed precision tab (issue 18's Pareto plot): the candidates, the sensitivity measure and the
// rules (REGEX -> METHOD or dense, validated as typed, one line per problem); "Measure" runs the
// measurement pass on a worker (progress, cancel); then the allocator's frontier (predicted KL against
// bits per weight) beside the candidates' measured uniform points, and a budget slider that moves along
// the frontier and shows the allocation on the layer heat map. "Quantize allocation" quantizes the
// slider's allocation and adds its measured KL to the plot beside the predicted one; the main window
// shows it in Results and offers it to Export like a Quantize job's methods.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "qs/pipeline/exporter.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/mixed_precision_allocation.h"
#include "qs/pipeline/mixed_precision_measure.h"

#include "jobs/job_runner.h"
#include "pages/inspector_page.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSlider;
class QTableWidget;
class QCPGraph;

namespace qs::gui {

class MixedAllocationMap;
class PlotView;

class MixedPrecisionPage : public InspectorPage {
    Q_OBJECT

public:
    // A quantized allocation: where it sits on the plot.
    struct MeasuredPoint {
        double bitsPerWeight = 0.0;
        double predictedKl = 0.0;
        double measuredKl = 0.0;
    };

    explicit MixedPrecisionPage(QWidget* parent = nullptr);
    ~MixedPrecisionPage() override;

    QString title() const override { return tr("Bit budget"); }
    QString toolTip() const override {
        return tr("Mixed precision under a bits-per-weight budget: the Pareto frontier and its allocation");
    }
    QString key() const override { return QStringLiteral("mixed"); }
    void setCheckpoint(CheckpointPtr checkpoint) override;
    void setTensor(const QString&) override {}
    bool isBusy() const override;

    void setCandidates(const QString& list);  // "gptq2,gptq4,gptq8"
    void setSensitivity(pipeline::Sensitivity measure);
    void setSampling(int samples, int sequenceLength, int evaluationSamples);
    // Replaces the rules table: each row a regex and a method ("dense" keeps the linears dense).
    void setRules(const std::vector<std::pair<QString, QString>>& rows);
    QString rulesProblem() const;  // empty when the rules are valid for the open checkpoint

    // Starts the measurement pass; false (the reason in status()) when the inputs are refused.
    bool measure();
    void cancel();
    // A measured table without the pass (tests): its frontier, the plot and the slider, computed here.
    void setTable(pipeline::SensitivityTable table);
    // Quantizes the slider's allocation; false (the reason in status()) without one.
    bool quantizeAllocation();

    const std::vector<pipeline::MixedAllocation>& frontier() const { return frontier_; }
    std::optional<pipeline::MixedAllocation> currentAllocation() const;
    const pipeline::MixedPrecisionPlanner* planner() const { return planner_.get(); }
    const std::vector<MeasuredPoint>& measuredPoints() const { return measured_; }
    // Every allocation quantized since the measurement, a method each (label "mixed 4.31 bpw"), as the
    // Results page and the Export panel take a job's result; null before the first.
    const std::shared_ptr<const pipeline::JobResult>& allocations() const { return allocations_; }
    // What an export of that allocation records as its settings in quantscope_report.json, as
    // quantize --target-bpw records them (the candidates, rules, sensitivity, budget, allocation, the
    // predicted and measured KL, the texts); {} for a label that is not one of allocations().
    nlohmann::json exportSettings(const std::string& label) const;
    QString status() const;

    QSlider* budgetSlider() const { return slider_; }
    MixedAllocationMap* allocationMap() const { return map_; }
    PlotView* plot() const { return plot_; }
    QTableWidget* rulesTable() const { return rules_; }

signals:
    void measurementFinished();
    void allocationMeasured();
    // After allocationMeasured: allocations() with the new one last.
    void allocationsQuantized(const std::shared_ptr<const pipeline::JobResult>& result);

private:
    struct Inputs {
        pipeline::ModuleRules rules;
        std::vector<std::string> overrides;  // as typed, "REGEX=METHOD", for the report
        std::vector<pipeline::MethodSpec> candidates;
    };
    std::optional<Inputs> validatedInputs(QString& problem) const;
    void validateRules();
    void showFrontier();
    void showPoint(int index);
    void drawPlot();
    void setRunning(bool running);
    ProgressCallback progressCallback();
    void showProgress(const qs::Progress& p);
    void setStatus(const QString& text, bool problem = false);

    CheckpointPtr checkpoint_;
    JobRunner runner_;
    int samples_ = 16, sequenceLength_ = 128, evaluationSamples_ = 16;
    std::unique_ptr<pipeline::SensitivityTable> table_;  // the planner reads it in place
    std::unique_ptr<pipeline::MixedPrecisionPlanner> planner_;
    std::vector<pipeline::MixedAllocation> frontier_;
    std::optional<pipeline::JobPlan> measuredPlan_;  // the texts the measurement used, for quantizing an allocation
    std::vector<MeasuredPoint> measured_;
    std::shared_ptr<const pipeline::JobResult> allocations_;
    nlohmann::json measuredSettings_;  // the report's settings shared by this measurement's allocations
    std::map<std::string, nlohmann::json> exportSettings_;  // by allocation label

    QLineEdit* candidates_;
    QComboBox* sensitivity_;
    QTableWidget* rules_;
    QLabel* rulesProblem_;
    QPushButton* measureButton_;
    QPushButton* quantizeButton_;
    QProgressBar* progress_;
    QLabel* status_;
    PlotView* plot_;
    QCPGraph* frontierGraph_;
    QCPGraph* uniformGraph_;
    QCPGraph* currentGraph_;
    QCPGraph* measuredGraph_;
    QSlider* slider_;
    QLabel* pointLabel_;
    MixedAllocationMap* map_;
};

}  // namespace qs::gui
