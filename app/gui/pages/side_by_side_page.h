#pragma once
// The "Side by side" tab (key side-by-side): the open quantized checkpoint (A) against a second
// quantization of the same model (B, File ▸ Compare with Second Quantization…), linear by linear: each
// one's scheme, bits per weight and RMS error against the original (once named), the RMS of A − B and
// whether they differ at all; sortable, with "only tensors that differ". The row selected shows the
// histogram of decoded A − decoded B for that linear and, with an original, both errors against it
// overlaid. The comparison (formats::diffQuantizations) runs
// on a DiffJob with its progress and Cancel on the page; the histogram on the page's JobRunner.
#include <optional>

#include "qs/analysis/histogram.h"

#include "jobs/diff_job.h"
#include "jobs/job_runner.h"
#include "pages/inspector_page.h"

class QCheckBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QSplitter;
class QTableView;

namespace qs::gui {

class PlotView;
class SideBySideModel;

class SideBySidePage : public InspectorPage {
    Q_OBJECT

public:
    explicit SideBySidePage(QWidget* parent = nullptr);

    QString title() const override { return tr("Side by side"); }
    QString toolTip() const override {
        return tr(
            "The open quantization against a second one of the same model, linear by linear "
            "(File ▸ Compare with Second Quantization…)");
    }
    QString key() const override { return QStringLiteral("side-by-side"); }
    void setCheckpoint(CheckpointPtr checkpoint) override;  // A; forgets B
    void setTensor(const QString& name) override;           // selects the row of its linear, when listed
    bool isBusy() const override;

    // B: refused in one line through errorOccurred unless it quantizes the same model (the same linears
    // by name and shape); else the comparison starts. False when refused.
    bool setSecond(const QString& path);
    bool hasSecond() const { return second_ != nullptr; }
    const QString& secondPath() const { return secondPath_; }
    // The original both were quantized from (null: none); a comparison with B starts again with it.
    void setOriginal(CheckpointPtr original);

    // The histogram of the selected linear's decoded A − decoded B, and of each one's decoded − original.
    struct Difference {
        QString linear;
        bool differs = false;
        analysis::Histogram histogram;  // empty when !differs
        double rms = 0.0;
        std::optional<analysis::Histogram> errorA;  // with an original
        std::optional<analysis::Histogram> errorB;
    };
    const std::optional<Difference>& difference() const { return difference_; }

    DiffJob* job() const { return job_; }
    SideBySideModel* model() const { return model_; }
    QSortFilterProxyModel* proxy() const { return proxy_; }
    QTableView* table() const { return table_; }
    QCheckBox* differsOnly() const { return differsOnly_; }
    QPushButton* cancelButton() const { return cancel_; }
    PlotView* differencePlot() const { return plot_; }
    PlotView* errorPlot() const { return errorPlot_; }  // hidden without an original
    QString captionText() const;
    // Selects the row of `prefix` ("model.layers.0.mlp.down_proj"); false when it is not shown.
    bool selectLinear(const QString& prefix);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void setUpTable();
    void setUpPlots();
    void connectJob();
    void compare();
    void showDiff(const DiffPtr& diff);
    void onRowSelected();
    void showDifference(std::optional<Difference> difference);
    void drawDifference();
    void drawErrors();
    void setRunning(bool running);

    CheckpointPtr checkpoint_;
    CheckpointPtr second_;
    CheckpointPtr original_;
    QString secondPath_;
    QString tensor_;        // selected in the tree
    QString status_;        // what the caption says besides the counts: running, cancelled, failed
    bool restart_ = false;  // a comparison starts again once the cancelled one's worker has gone
    bool stale_ = false;    // a row was selected while the tab was hidden: its plots wait for the show
    std::optional<Difference> difference_;
    DiffJob* job_;
    JobRunner runner_;
    SideBySideModel* model_;
    QSortFilterProxyModel* proxy_;
    QLabel* caption_;
    QCheckBox* differsOnly_;
    QProgressBar* progress_;
    QPushButton* cancel_;
    QTableView* table_;
    PlotView* plot_;
    PlotView* errorPlot_;
    QSplitter* plots_ = nullptr;  // the two plots abreast
};

}  // namespace qs::gui
