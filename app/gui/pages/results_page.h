#pragma once
// The Results tab: what the last quantization job measured, and the open checkpoint's evaluations
// against its original (Evaluate), one row each after the job's methods. KL per method (bars), KL per
// layer (lines, when measured: an evaluation has one KL for the whole checkpoint), output error per
// linear, and the table; for a mixture of experts, a tab with the tokens routed to each expert and
// one with each expert's output error under the method chosen there.
// Clicking a layer, a linear or an expert in a plot asks for it to be selected in the checkpoint tree.
#include <vector>

#include "jobs/evaluate_job.h"
#include "jobs/quantize_job.h"
#include "pages/inspector_page.h"

class QComboBox;
class QLabel;
class QSettings;
class QSplitter;
class QTabWidget;
class QTableView;

namespace qs::gui {

class ColumnChooser;
class ExpertErrorMap;
class ExpertHeatMap;
class KlPerLayerPlot;
class KlPerMethodPlot;
class OutputErrorPlot;
class ResultsTableModel;

class ResultsPage : public InspectorPage {
    Q_OBJECT

public:
    explicit ResultsPage(QWidget* parent = nullptr);

    QString title() const override { return tr("Results"); }
    QString key() const override { return QStringLiteral("results"); }
    void setCheckpoint(CheckpointPtr checkpoint) override;  // results belong to a checkpoint: cleared
    void setTensor(const QString&) override {}
    bool isBusy() const override { return false; }

    // The job's result; the evaluations stay beside it.
    void setResult(JobResultPtr result);
    // One more row, until another checkpoint opens (an evaluation of another checkpoint is dropped); an
    // evaluation of a file that has a row already replaces that row.
    void addEvaluation(EvaluationPtr evaluation);
    // What the page shows: the job's methods, then a row per evaluation.
    const JobResultPtr& result() const { return result_; }
    const std::vector<EvaluationPtr>& evaluations() const { return evaluations_; }

    KlPerMethodPlot* klPerMethod() const { return klPerMethod_; }
    KlPerLayerPlot* klPerLayer() const { return klPerLayer_; }
    OutputErrorPlot* outputError() const { return outputError_; }
    ResultsTableModel* table() const { return tableModel_; }
    QTableView* tableView() const { return tableView_; }
    // The table's columns (the header's right-click menu): the median hidden at first, since nine columns
    // do not fit the centre of a 1366-pixel window; the mean KLD plot's tooltips give it too.
    ColumnChooser* columns() const { return columns_; }
    void saveSettings(QSettings& settings) const;  // the hidden columns
    void restoreSettings(const QSettings& settings);
    ExpertHeatMap* expertHeatMap() const { return expertHeatMap_; }
    bool showsExpertTokens() const;  // the "Tokens per expert" tab is there (a result with expert rows)
    // Brings that tab to the front whenever a result has it (--tab experts; otherwise Methods stays in front).
    void preferExpertTokens(bool prefer) { preferExpertTokens_ = prefer; }
    bool expertTokensInFront() const;
    ExpertErrorMap* expertErrorMap() const { return expertErrorMap_; }
    bool showsExpertErrors() const;  // the "Error per expert" tab is there (a method logged experts' errors)
    // The methods that tab offers (their labels), and choosing one of them; false when it offers none such.
    QStringList expertErrorMethods() const;
    bool chooseExpertErrorMethod(const QString& label);
    void preferExpertErrors(bool prefer) { preferExpertErrors_ = prefer; }  // --tab expert-errors

signals:
    void layerActivated(int layer);
    void linearActivated(int layer, const QString& module);

private:
    QString summaryText() const;
    QString jobResultText() const;
    QString evaluationsText() const;
    void showExpertTokens();
    void showExpertErrors();
    void drawExpertErrors();
    void display(JobResultPtr shown);
    JobResultPtr withEvaluations() const;

    JobResultPtr jobResult_;
    std::vector<EvaluationPtr> evaluations_;
    JobResultPtr result_;  // jobResult_ and a row per evaluation
    QLabel* summary_;
    KlPerMethodPlot* klPerMethod_;
    KlPerLayerPlot* klPerLayer_;
    OutputErrorPlot* outputError_;
    ResultsTableModel* tableModel_;
    QTableView* tableView_;
    ColumnChooser* columns_;
    QTabWidget* sections_;
    ExpertHeatMap* expertHeatMap_;
    QLabel* expertStatus_;
    QWidget* expertTab_ = nullptr;
    ExpertErrorMap* expertErrorMap_;
    QComboBox* errorMethod_;  // data: the method's index in result_
    QWidget* errorTab_ = nullptr;
    bool preferExpertTokens_ = false;
    bool preferExpertErrors_ = false;
};

}  // namespace qs::gui
