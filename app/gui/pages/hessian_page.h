#pragma once
// The Hessian tab: after a short calibration of the selected linear's layer, diag(H) per input
// channel on a log scale, the channels GPTQ's act-order quantizes first marked and listed with
// their rank. One calibration (pipeline::hessianDiagonals, on a worker, on the device chosen in the
// Quantize panel) serves all seven linears of a layer.
#include <optional>

#include <QElapsedTimer>

#include "qs/pipeline/backend.h"
#include "qs/pipeline/hessian_diagonals.h"

#include "jobs/job_runner.h"
#include "jobs/remaining_time.h"
#include "pages/inspector_page.h"
#include "plots/plot_export.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace qs::gui {

class PlotView;

class HessianPage : public InspectorPage {
    Q_OBJECT

public:
    explicit HessianPage(QWidget* parent = nullptr);

    QString title() const override { return tr("Hessian"); }
    QString key() const override { return QStringLiteral("hessian"); }
    void setCheckpoint(CheckpointPtr checkpoint) override;
    void setTensor(const QString& name) override;
    bool isBusy() const override;

    void setSampling(int samples, int sequenceLength);
    void setDevice(pipeline::DeviceChoice device);  // where the next calibration runs
    pipeline::DeviceChoice device() const { return device_; }
    // Null until the selected linear's layer is calibrated.
    const pipeline::HessianDiagonal* shown() const;
    PlotView* plot() const { return plot_; }
    QString captionText() const;
    QString notCalibratedText() const;
    bool layerCalibrated() const;  // the selected linear's layer has its diagonals
    // Calibrate while idle (the selected layer, again after a cancel), Cancel while calibrating.
    QPushButton* calibrateButton() const { return calibrateButton_; }

protected:
    void showEvent(QShowEvent* event) override;

private:
    void refresh();
    // A calibrated layer and the backend it ran on ("CPU (2 threads)").
    struct Calibrated {
        pipeline::LayerHessianDiagonals layer;
        QString device;
    };

    void showLayer(Calibrated hessians);
    void showProgress(const qs::Progress& progress);
    void setRunning(bool running);
    void toggleCalibration();
    void showMessage(const QString& message);
    void draw();
    void fillTable(const pipeline::HessianDiagonal& d);
    void resetView();
    QString toolTipAt(double x) const;
    CsvTable csv() const;

    CheckpointPtr checkpoint_;
    int layer_ = -1;
    QString module_;
    QString refusal_;  // why this checkpoint cannot be calibrated (it is quantized); empty when it can
    bool stale_ = false;
    std::optional<Calibrated> hessians_;  // the last calibrated layer, kept for its other linears
    pipeline::DeviceChoice device_ = pipeline::DeviceChoice::Auto;
    JobRunner runner_;
    QElapsedTimer started_;    // the running calibration's, for its time left
    RemainingTime remaining_;  // from the layers it has run

    QSpinBox* samples_;
    QSpinBox* sequenceLength_;
    QProgressBar* progress_;
    QPushButton* calibrateButton_;
    PlotView* plot_;
    QTableWidget* table_;
    QLabel* caption_;
};

}  // namespace qs::gui
