#pragma once
// DeviceProbe: which device a job's Auto would run on, found on a worker thread. With a GPU,
// pipeline::selectBackend builds the CUDA backend and runs its start-up check against the CPU, which
// takes a fraction of a second (longer on a cold driver): the window asks once, at start-up, and the
// Quantize panel's device list and the About dialog show the answer when it arrives. The probe itself
// is injectable, so that a test can make it slow and see the event loop keep turning.
#include <functional>
#include <optional>

#include <QObject>
#include <QString>

#include "qs/pipeline/backend.h"

#include "jobs/job_runner.h"

namespace qs::gui {

struct DeviceReport {
    bool cudaUsable = false;  // Auto runs on the GPU, and CUDA can be chosen
    QString cudaName;         // the device's description ("CUDA: NVIDIA H200, 131.2 GiB free") when usable
    QString message;          // selectBackend's line: what Auto runs on and, for the CPU, why
};

class DeviceProbe : public QObject {
    Q_OBJECT

public:
    using Function = std::function<pipeline::BackendSelection()>;
    static Function automatic();  // pipeline::selectBackend(DeviceChoice::Auto)

    explicit DeviceProbe(Function probe = automatic(), QObject* parent = nullptr);

    void start();  // once; the answer comes with finished()
    bool isDone() const { return report_.has_value(); }
    const std::optional<DeviceReport>& report() const { return report_; }

signals:
    void finished(const qs::gui::DeviceReport& report);

private:
    void deliver(DeviceReport report);

    Function probe_;
    JobRunner runner_;
    bool started_ = false;
    std::optional<DeviceReport> report_;
};

}  // namespace qs::gui
