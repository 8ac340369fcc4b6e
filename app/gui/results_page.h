#pragma once
// The Results tab: what the last quantization job measured. KL per method (bars), KL per layer
// (lines, when measured), output error per linear, and the table; clicking a layer or a linear in
// a plot asks for it to be selected in the checkpoint tree.
#include "inspector_page.h"
#include "quantize_job.h"

class QLabel;
class QSplitter;
class QTableView;

namespace qs::gui {

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
    void setCheckpoint(CheckpointPtr checkpoint) override;   // results belong to a checkpoint: cleared
    void setTensor(const QString&) override {}
    bool isBusy() const override { return false; }

    void setResult(JobResultPtr result);
    const JobResultPtr& result() const { return result_; }

    KlPerMethodPlot* klPerMethod() const { return klPerMethod_; }
    KlPerLayerPlot* klPerLayer() const { return klPerLayer_; }
    OutputErrorPlot* outputError() const { return outputError_; }
    ResultsTableModel* table() const { return tableModel_; }

signals:
    void layerActivated(int layer);
    void linearActivated(int layer, const QString& module);

private:
    QString summaryText() const;

    JobResultPtr result_;
    QLabel* summary_;
    KlPerMethodPlot* klPerMethod_;
    KlPerLayerPlot* klPerLayer_;
    OutputErrorPlot* outputError_;
    ResultsTableModel* tableModel_;
    QTableView* tableView_;
};

}  // namespace qs::gui
