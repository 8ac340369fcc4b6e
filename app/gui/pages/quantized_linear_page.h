#pragma once
// The "Quantized" tab: what a quantized linear's stored parts mean, for the linear the selected
// tensor belongs to (its codes, scales, zeros or g_idx alike): how its codes use the 2^bits levels (or
// the E2M1 / E4M3 values), its scales and zeros per group, g_idx as the group of each input column when
// act-order, and — once the user names the original checkpoint — decoded − original with its RMS.
// The decoded weights' own histogram is the Histogram tab's. Computed on a worker, from core's
// formats::LinearReader (decode), quant::codeUsage and formats::roundingError.
#include <cstdint>
#include <optional>
#include <vector>

#include "qs/analysis/histogram.h"
#include "qs/quant/code_usage.h"

#include "jobs/job_runner.h"
#include "pages/inspector_page.h"

class QLabel;

namespace qs::gui {

class PlotView;

class QuantizedLinearPage : public InspectorPage {
    Q_OBJECT

public:
    explicit QuantizedLinearPage(QWidget* parent = nullptr);

    QString title() const override { return tr("Quantized"); }
    QString key() const override { return QStringLiteral("quantized"); }
    void setCheckpoint(CheckpointPtr checkpoint) override;
    void setTensor(const QString& name) override;
    bool isBusy() const override;
    bool hasQuantizedLinears() const { return hasQuantizedLinears_; }  // of the open checkpoint

    // The checkpoint the open one was quantized from: checked from the headers (names and shapes of
    // every quantized linear) and refused with one line through errorOccurred when it does not fit.
    bool setOriginal(const QString& path);
    const QString& originalPath() const { return originalPath_; }

    struct Views {
        QString linear;                       // the module prefix
        QString scheme;                       // "int4 g128 act-order asym"
        std::vector<quant::CodeLevel> usage;  // empty when the format stores no code per weight
        QString usageNote;                    // why usage is empty
        analysis::Histogram scales;
        std::optional<analysis::Histogram> zeros;  // integer codes only
        QString scaleNote;                         // the scales' element type, block and global scale
        std::vector<std::int32_t> gIdx;            // act-order only
        bool storesGIdx = false;                   // a g_idx tensor, act-order or c / group
        std::optional<analysis::Histogram> error;  // decoded − original, with an original
        double errorRms = 0.0;
        double originalRms = 0.0;
        QString errorProblem;  // the original's linear could not be compared
    };
    const std::optional<Views>& views() const { return views_; }
    QString captionText() const;

    PlotView* codesPlot() const { return codes_; }
    PlotView* scalesPlot() const { return scales_; }
    PlotView* zerosPlot() const { return zeros_; }
    PlotView* gIdxPlot() const { return gIdx_; }
    PlotView* errorPlot() const { return error_; }

protected:
    void showEvent(QShowEvent* event) override;

private:
    void refresh();
    void show(std::optional<Views> views);
    void clear(const QString& message);
    void drawCodes();
    void drawGIdx();

    CheckpointPtr checkpoint_;
    CheckpointPtr original_;
    QString originalPath_;
    QString tensor_;
    bool hasQuantizedLinears_ = false;
    bool stale_ = false;
    std::optional<Views> views_;
    QString message_;
    JobRunner runner_;

    PlotView* codes_;
    PlotView* scales_;
    PlotView* zeros_;
    PlotView* gIdx_;
    PlotView* error_;
    QLabel* caption_;
};

}  // namespace qs::gui
