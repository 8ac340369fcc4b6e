#include "jobs/device_probe.h"

#include <utility>

#include "qs/pipeline/resource_estimate.h"

namespace qs::gui {

DeviceProbe::Function DeviceProbe::automatic() {
    return [] {
        // The estimate's cost model measures this machine's GEMM rate once: here, off the GUI thread,
        // before the first estimate needs it.
        pipeline::machineGemmRate();
        return pipeline::selectBackend(pipeline::DeviceChoice::Auto);
    };
}

DeviceProbe::DeviceProbe(Function probe, QObject* parent) : QObject(parent), probe_(std::move(probe)) {}

void DeviceProbe::start() {
    if (started_) return;
    started_ = true;
    runner_.start(
        [probe = probe_](const qs::CancelToken&) {
            const pipeline::BackendSelection selection = probe();
            DeviceReport report;
            report.cudaUsable = selection.backend && selection.backend->isCuda();
            if (report.cudaUsable) report.cudaName = QString::fromStdString(selection.backend->description());
            report.message = QString::fromStdString(selection.message);
            return report;
        },
        [this](DeviceReport report) { deliver(std::move(report)); },
        // A probe that throws leaves the CPU: Auto falls back to it whatever went wrong.
        [this](const QString& message) {
            deliver({false, {}, tr("device: the CPU (probing the GPU failed: %1)").arg(message)});
        });
}

void DeviceProbe::deliver(DeviceReport report) {
    report_ = std::move(report);
    emit finished(*report_);
}

}  // namespace qs::gui
