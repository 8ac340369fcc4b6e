#pragma once
// The histogram tab: the selected tensor's value distribution, linear or log counts, with the tails
// beyond ±k·σ shaded and coloured, and the moments underneath.
#include <optional>

#include "qs/analysis/histogram.h"
#include "qs/cancel_token.h"
#include "qs/io/checkpoint.h"

#include "jobs/job_runner.h"
#include "pages/inspector_page.h"
#include "plots/plot_export.h"

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;
class QCPTextElement;

namespace qs::gui {

class PlotView;

class HistogramPage : public InspectorPage {
    Q_OBJECT

public:
    explicit HistogramPage(QWidget* parent = nullptr);

    QString title() const override { return tr("Histogram"); }
    QString key() const override { return QStringLiteral("histogram"); }
    void setCheckpoint(CheckpointPtr checkpoint) override;
    void setTensor(const QString& name) override;
    bool isBusy() const override;

    void setBins(int bins);

    const std::optional<analysis::Histogram>& histogram() const { return histogram_; }
    const QString& shownTensor() const { return shownTensor_; }
    PlotView* plot() const { return plot_; }
    QString statsText() const;
    // What the shown histogram was decoded as ("int4 g128 asym") when the tensor is a quantized
    // linear's packed codes; empty when the stored values themselves are shown.
    const QString& decodedAs() const { return decodedAs_; }

protected:
    void showEvent(QShowEvent* event) override;

private:
    void refresh();
    struct Shown {
        analysis::Histogram histogram;
        QString decodedAs;
    };
    static Shown computeShown(const io::Checkpoint& checkpoint, const std::string& name,
                              const analysis::HistogramOptions& options, const qs::CancelToken& token);
    void showResult(const QString& tensor, Shown shown);
    void clearPlot(const QString& message);
    void draw();
    void drawTailMarks(const analysis::Histogram& h);
    void resetView();
    QString toolTipAt(double x) const;
    CsvTable csv() const;

    CheckpointPtr checkpoint_;
    QString tensor_;
    QString shownTensor_;
    bool stale_ = false;
    std::optional<analysis::Histogram> histogram_;
    QString decodedAs_;
    JobRunner runner_;

    QSpinBox* bins_;
    QCheckBox* log_;
    QDoubleSpinBox* sigma_;
    PlotView* plot_;
    QLabel* stats_;
};

}  // namespace qs::gui
