#pragma once
// Help ▸ About: the version, the compute backend a job's Auto uses (the window's DeviceProbe answer;
// the dialog never probes the device itself), and the licences of what QuantScope ships: the bundled
// models and texts (read from the installed resources) and the libraries.
#include <optional>

#include <QDialog>

#include "jobs/device_probe.h"

class QTextBrowser;

namespace qs::gui {

class AboutDialog : public QDialog {
    Q_OBJECT

public:
    // `device`: the probe's answer, or nullopt while it is still probing (then showDevice() follows).
    explicit AboutDialog(std::optional<DeviceReport> device, QWidget* parent = nullptr);

    static QString versionText();  // "QuantScope 0.1.0"
    // "device: CPU (2 threads) (this build has no CUDA backend …)", or that the GPU is being checked.
    static QString backendText(const std::optional<DeviceReport>& device);
    static QString licencesHtml();  // bundled models and data, then libraries

    void showDevice(const DeviceReport& device);
    QString text() const;  // everything shown, as plain text (tests)

private:
    void fill();

    std::optional<DeviceReport> device_;
    QTextBrowser* body_;
};

}  // namespace qs::gui
