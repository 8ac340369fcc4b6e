#pragma once
// The "Quantized" tab: what a quantized linear's stored parts mean, for the linear the selected
// tensor belongs to (its codes, scales, zeros or g_idx alike): how its codes use the 2^bits levels (or
// the E2M1 / E4M3 values), its scales and zeros per group, g_idx as the group of each input column when
// act-order, and — once the user names the original checkpoint — decoded − original with its RMS.
// A GGUF linear shows what its ggml blocks store instead (io::ggmlBlockFields): its codes (or codebook
// entries), its sub-block scales and mins as the integers stored, its F16 d and dmin, and the type's bits
// per weight. The decoded weights' own histogram is the Histogram tab's. Computed on a worker, from core's
// formats::LinearReader (decode), quant::codeUsage / fieldUsage and formats::roundingError.
#include <cstdint>
#include <optional>
#include <vector>

#include "qs/analysis/histogram.h"
#include "qs/quant/code_usage.h"

#include "jobs/job_runner.h"
#include "pages/inspector_page.h"

class QGridLayout;
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

    // One stored field of a GGUF linear's blocks: a bar per stored integer (sub-block scales and mins),
    // or the histogram of its values (the F16 d of a legacy block).
    struct FieldPlot {
        QString title;                              // "Scales per 32"
        QString xLabel;                             // "scale"
        std::vector<quant::CodeLevel> levels;       // an integer field
        std::optional<analysis::Histogram> values;  // a float field
        bool empty() const { return levels.empty() && !values; }
    };
    // What a GGUF linear's ggml blocks store, shown in place of the scales, zeros and g_idx.
    struct GgmlBlocks {
        QString type;  // ggml's name: "q4_K"
        int blockBytes = 0;
        int blockWeights = 0;
        double bitsPerWeight = 0.0;  // 8 · blockBytes / blockWeights: the one definition (user guide)
        QString fields;  // "4-bit codes, one per weight; 6-bit sub-block scales and ..., one per 32 weights; ..."
        int weightsPerCode = 1;  // a codebook entry serves 8 (or 4) weights: the codes plot counts groups
        FieldPlot scales;
        FieldPlot mins;
        std::optional<analysis::Histogram> d;     // the super-block's F16 d (K-quants, IQ types)
        std::optional<analysis::Histogram> dmin;  // and dmin (Q2_K, Q4_K, Q5_K)
        QString signsNote;                        // IQ1/IQ2/IQ3: how many values are negated or shifted down
    };

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
        QString errorProblem;            // the original's linear could not be compared
        std::optional<GgmlBlocks> ggml;  // a GGUF linear
    };
    const std::optional<Views>& views() const { return views_; }
    QString captionText() const;

    PlotView* codesPlot() const { return codes_; }
    PlotView* scalesPlot() const { return scales_; }
    PlotView* zerosPlot() const { return zeros_; }
    PlotView* gIdxPlot() const { return gIdx_; }
    PlotView* errorPlot() const { return error_; }
    PlotView* superMinsPlot() const { return superMins_; }  // a GGUF linear's dmin

protected:
    void showEvent(QShowEvent* event) override;

private:
    void refresh();
    void show(std::optional<Views> views);
    void clear(const QString& message);
    void drawCodes();
    void drawGIdx();
    void drawGgml();
    void drawParts();
    void showSuperMins(bool shown);
    void restoreAxes();
    void drawField(PlotView* plot, const FieldPlot& field, const QString& none, const QString& countLabel);

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
    PlotView* superMins_;
    QGridLayout* grid_ = nullptr;
    QLabel* caption_;
};

}  // namespace qs::gui
