#pragma once
// The Results tab: what the last quantization job measured. KL per method (bars), KL per layer
// (lines, when measured), output error per linear, and the table; for a mixture of experts, a tab
// with the tokens routed to each expert. Clicking a layer, a linear or an expert in a plot asks for it
// to be selected in the checkpoint tree.
#include "jobs/quantize_job.h"
#include "pages/inspector_page.h"

class QLabel;
class QSplitter;
class QTabWidget;
class QTableView;

namespace qs::gui {

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

    void setResult(JobResultPtr result);
    const JobResultPtr& result() const { return result_; }

    KlPerMethodPlot* klPerMethod() const { return klPerMethod_; }
    KlPerLayerPlot* klPerLayer() const { return klPerLayer_; }
    OutputErrorPlot* outputError() const { return outputError_; }
    ResultsTableModel* table() const { return tableModel_; }
    ExpertHeatMap* expertHeatMap() const { return expertHeatMap_; }
    bool showsExpertTokens() const;  // the "Tokens per expert" tab is there (a result with expert rows)
    // Brings that tab to the front whenever a result has it (--tab experts; otherwise Methods stays in front).
    void preferExpertTokens(bool prefer) { preferExpertTokens_ = prefer; }
    bool expertTokensInFront() const;

signals:
    void layerActivated(int layer);
    void linearActivated(int layer, const QString& module);

private:
    QString summaryText() const;
    void showExpertTokens();

    JobResultPtr result_;
    QLabel* summary_;
    KlPerMethodPlot* klPerMethod_;
    KlPerLayerPlot* klPerLayer_;
    OutputErrorPlot* outputError_;
    ResultsTableModel* tableModel_;
    QTableView* tableView_;
    QTabWidget* sections_;
    ExpertHeatMap* expertHeatMap_;
    QLabel* expertStatus_;
    QWidget* expertTab_ = nullptr;
    bool preferExpertTokens_ = false;
};

}  // namespace qs::gui
