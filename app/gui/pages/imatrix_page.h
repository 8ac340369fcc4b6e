#pragma once
// The Importance tab: llama.cpp's importance matrix (File ▸ Open imatrix…, `--imatrix`, in its GGUF or
// legacy .dat format, pipeline::Imatrix) as the GGUF methods weigh a linear by it: a layer × linear map
// of each entry's mean Σx²/count, and for the selected linear its importance per input column (log
// scale; the columns whose squared error llama-quantize weighs most stand out). The caption says what the
// file was computed on and how many of the open model's linears it has an entry for. Reading runs on a
// worker; the tab is shown once an imatrix is open.
#include <memory>
#include <optional>
#include <vector>

#include "qs/model/model_config.h"
#include "qs/pipeline/gguf_imatrix.h"
#include "qs/pipeline/imatrix_map.h"

#include "jobs/job_runner.h"
#include "pages/inspector_page.h"

class QLabel;

namespace qs::gui {

class ImportanceMap;
class PlotView;

class ImatrixPage : public InspectorPage {
    Q_OBJECT

public:
    explicit ImatrixPage(QWidget* parent = nullptr);

    QString title() const override { return tr("Importance"); }
    QString toolTip() const override { return tr("llama.cpp's importance matrix (imatrix), per linear and column"); }
    QString key() const override { return QStringLiteral("imatrix"); }
    void setCheckpoint(CheckpointPtr checkpoint) override;
    void setTensor(const QString& name) override;
    bool isBusy() const override { return runner_.isBusy(); }

    // Reads `path` on the worker: imatrixLoaded then, or errorOccurred with the reader's one line.
    void openImatrix(const QString& path);
    const QString& imatrixPath() const { return path_; }  // empty until one is loaded
    const std::optional<pipeline::ImatrixCoverage>& coverage() const { return coverage_; }
    const std::vector<float>& columns() const { return columns_; }  // the selected linear's, empty when none
    ImportanceMap* map() const { return map_; }
    PlotView* columnsPlot() const { return columnsPlot_; }
    QString captionText() const;

signals:
    void imatrixLoaded(const QString& path);
    void linearActivated(int layer, const QString& module);

private:
    void showColumns();
    void updateCoverage();
    void resetColumnsView();
    QString toolTipAt(double x) const;

    CheckpointPtr checkpoint_;
    std::optional<model::ModelConfig> config_;  // the open checkpoint's, when it has one QuantScope reads
    std::shared_ptr<const pipeline::Imatrix> imatrix_;
    std::optional<pipeline::ImatrixCoverage> coverage_;
    QString path_;
    QString tensor_;
    int layer_ = -1;
    QString module_;
    std::vector<float> columns_;
    JobRunner runner_;

    ImportanceMap* map_;
    PlotView* columnsPlot_;
    QLabel* caption_;
};

}  // namespace qs::gui
