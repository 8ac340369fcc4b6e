#pragma once
// The Quantize panel: which methods (with their bits and group size), which calibration and
// evaluation text and how much of it, the device, per-layer KL, and the job's predicted peak memory
// and time, computed on a worker whenever any of these settings changes, so it is on screen before
// Start. The device list is filled when the window's DeviceProbe answers.
#include <optional>
#include <string>
#include <vector>

#include <QTimer>
#include <QVariantMap>
#include <QWidget>

#include "qs/pipeline/resource_estimate.h"

#include "jobs/device_probe.h"
#include "jobs/job_runner.h"
#include "jobs/quantize_settings.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLayout;
class QLineEdit;
class QPushButton;
class QSettings;
class QSpinBox;

namespace qs::gui {

class QuantizePanel : public QWidget {
    Q_OBJECT

public:
    explicit QuantizePanel(QWidget* parent = nullptr);

    // Empty path: nothing to quantize. A `refusal` (a quantized checkpoint whose linears do not decode)
    // disables Start and is shown in place of the estimate and as Start's tooltip. A `forwardPassRefusal`
    // (an architecture QuantScope does not run: forward_pass_support.h) turns off the methods that need
    // the forward pass, each saying why, and Start, saying which methods the CLI can still run without one.
    // `hasExperts` (a mixture of experts) shows the choice to calibrate every expert on every token.
    // A `sourceNote` (a quantized checkpoint: pipeline::QuantizedSource::referenceNote) is shown above the
    // methods: its decoded weights are what the methods quantize and what their KL is measured against.
    void setCheckpoint(const QString& path, const QString& refusal = {}, const QString& forwardPassRefusal = {},
                       bool hasExperts = false, const QString& sourceNote = {});
    const QString& refusal() const { return refusal_; }  // Start's reason to be off, of either kind
    const QString& forwardPassRefusal() const { return forwardPassRefusal_; }
    QString sourceNote() const;  // the note shown, "" when none is
    // Whether the row of `method` ("gptq4", "rtn4", "q4_k_m") can be ticked, and its tooltip.
    bool methodAvailable(const std::string& method) const;
    QString methodToolTip(const std::string& method) const;
    QuantizeSettings settings() const;

    // Checks exactly the rows whose method name is listed ("rtn4", "fp8"); false if one is unknown.
    bool selectMethods(const std::vector<std::string>& names);
    void setSampling(int samples, int sequenceLength, int evaluationSamples);
    void setPerLayerKl(bool on);
    // llama.cpp's imatrix open in the Importance tab (empty: none): offered to the GGUF methods, on by default.
    void setImatrix(const QString& path);
    void setRunning(bool running);

    bool isEstimating() const { return estimator_.isBusy() || debounce_.isActive(); }
    const std::optional<pipeline::ResourceEstimate>& estimate() const { return estimate_; }
    // The settings the shown estimate (or its error) was computed for: every control that changes
    // the plan re-estimates, so once isEstimating() is false these are settings().
    const std::optional<QuantizeSettings>& estimatedSettings() const { return estimated_; }
    QString estimateText() const;

    // Every control's value by a stable key ("samples", "methods/trellis#1/bits", ...), to be kept
    // between sessions (QSettings) and put back; restoreDefaults() puts back the values it was built with.
    QVariantMap state() const;
    void applyState(const QVariantMap& state);
    void restoreDefaults() { applyState(defaults_); }
    void saveSettings(QSettings& settings) const;
    void restoreSettings(QSettings& settings);

    // The device probe's answer: enables the CUDA entry (named after the GPU) or says why not.
    void showDevices(const DeviceReport& report);
    bool cudaSelectable() const;
    QPushButton* startButton() const { return start_; }

signals:
    void startRequested();
    void cancelRequested();
    void deviceChosen(qs::pipeline::DeviceChoice device);  // also where the Hessian tab calibrates

private:
    struct MethodRow {
        QCheckBox* check = nullptr;
        QSpinBox* bits = nullptr;    // null for the fixed formats
        QComboBox* group = nullptr;  // null where groups do not apply
        std::string prefix, suffix;
        std::string label;  // as the method list names it (two rows may share one)
        bool variableBits = false;
        QString tooltip;  // what the method does (a row turned off says why instead)
        std::string name() const;
    };

    QString rowKey(std::size_t row) const;  // "gptq-act#0": prefix, suffix and which of the rows alike
    QWidget* createMethods();
    QWidget* createTexts();
    QWidget* createRun();
    QLayout* createFooter();  // the estimate, Start and Cancel: below the scrolling settings
    QLineEdit* createFileField(const QString& placeholder);
    void scheduleEstimate();
    void computeEstimate();
    void showEstimate(pipeline::ResourceEstimate estimate, QuantizeSettings of);
    void showEstimateError(const QString& message, QuantizeSettings of);
    void updateStartButton();
    void showArchitectureSupport();
    const MethodRow* rowNamed(const std::string& method) const;

    QString checkpoint_;
    QString refusal_;
    QString forwardPassRefusal_;
    QLabel* architectureNote_ = nullptr;
    QLabel* sourceNote_ = nullptr;  // a quantized source: its decoded weights are the reference
    std::vector<MethodRow> rows_;
    QLineEdit* calibrationFile_ = nullptr;
    QSpinBox* samples_ = nullptr;
    QSpinBox* sequenceLength_ = nullptr;
    QLineEdit* evaluationFile_ = nullptr;
    QSpinBox* evaluationSamples_ = nullptr;
    QComboBox* device_ = nullptr;
    QComboBox* matmul_ = nullptr;  // the calibration passes' GEMMs: auto, BF16, f32
    QCheckBox* perLayerKl_ = nullptr;
    QCheckBox* kvCacheFp8_ = nullptr;
    QCheckBox* rotate_ = nullptr;
    QCheckBox* useImatrix_ = nullptr;  // shown while an imatrix is open
    QString imatrix_;
    QCheckBox* allExperts_ = nullptr;  // shown for a mixture of experts only
    bool hasExperts_ = false;
    QLabel* estimateLabel_ = nullptr;
    QPushButton* start_ = nullptr;
    QPushButton* cancel_ = nullptr;
    bool running_ = false;
    QVariantMap defaults_;     // state() as built
    bool cudaWanted_ = false;  // restored settings chose CUDA before the probe enabled it

    QTimer debounce_;
    JobRunner estimator_;
    std::optional<pipeline::ResourceEstimate> estimate_;
    std::optional<QuantizeSettings> estimated_;
};

}  // namespace qs::gui
