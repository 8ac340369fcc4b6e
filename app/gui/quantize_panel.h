#pragma once
// The Quantize panel: which methods (with their bits and group size), which calibration and
// evaluation text and how much of it, the device, per-layer KL, and the job's predicted peak memory
// and time, computed on a worker whenever a setting changes, so it is on screen before Start.
#include <optional>
#include <string>
#include <vector>

#include <QTimer>
#include <QWidget>

#include "job_runner.h"
#include "qs/pipeline/resource_estimate.h"
#include "quantize_settings.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace qs::gui {

class QuantizePanel : public QWidget {
    Q_OBJECT

public:
    explicit QuantizePanel(QWidget* parent = nullptr);

    void setCheckpoint(const QString& path);   // empty: nothing to quantize
    QuantizeSettings settings() const;

    // Checks exactly the rows whose method name is listed ("rtn4", "fp8"); false if one is unknown.
    bool selectMethods(const std::vector<std::string>& names);
    void setSampling(int samples, int sequenceLength, int evaluationSamples);
    void setPerLayerKl(bool on);
    void setRunning(bool running);

    bool isEstimating() const { return estimator_.isBusy() || debounce_.isActive(); }
    const std::optional<pipeline::ResourceEstimate>& estimate() const { return estimate_; }
    QString estimateText() const;
    bool cudaSelectable() const;

signals:
    void startRequested();
    void cancelRequested();

private:
    struct MethodRow {
        QCheckBox* check = nullptr;
        QSpinBox* bits = nullptr;       // null for the fixed formats
        QComboBox* group = nullptr;     // null where groups do not apply
        std::string prefix, suffix;
        bool variableBits = false;
        std::string name() const;
    };

    QWidget* createMethods();
    QWidget* createTexts();
    QWidget* createRun();
    QLineEdit* createFileField(const QString& placeholder);
    void scheduleEstimate();
    void computeEstimate();
    void showEstimate(pipeline::ResourceEstimate estimate);
    void showEstimateError(const QString& message);
    void updateStartButton();

    QString checkpoint_;
    std::vector<MethodRow> rows_;
    QLineEdit* calibrationFile_ = nullptr;
    QSpinBox* samples_ = nullptr;
    QSpinBox* sequenceLength_ = nullptr;
    QLineEdit* evaluationFile_ = nullptr;
    QSpinBox* evaluationSamples_ = nullptr;
    QComboBox* device_ = nullptr;
    QCheckBox* perLayerKl_ = nullptr;
    QLabel* estimateLabel_ = nullptr;
    QPushButton* start_ = nullptr;
    QPushButton* cancel_ = nullptr;
    bool running_ = false;

    QTimer debounce_;
    JobRunner estimator_;
    std::optional<pipeline::ResourceEstimate> estimate_;
};

}  // namespace qs::gui
