#include "window/about_dialog.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <QDialogButtonBox>
#include <QLabel>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "qs/pipeline/bundled_resources.h"

namespace qs::gui {
namespace {

struct LibraryLicence {
    const char* library;
    const char* licence;
    const char* use;
};

constexpr LibraryLicence kLibraries[] = {
    {"Qt 6", "LGPL-3.0", "the user interface"},           {"QCustomPlot", "GPL-3.0", "every plot"},
    {"Eigen", "MPL-2.0", "matrices and GEMMs"},           {"nlohmann/json", "MIT", "config.json, reports"},
    {"PCRE2", "BSD-3-Clause", "tokenizer pre-splitting"}, {"CLI11", "BSD-3-Clause", "the command line"},
};

QString readFile(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return QString::fromStdString(text.str());
}

// The "## Licence" section of the demo's README: the weights and text it was made from.
QString demoLicence() {
    const auto readme = pipeline::bundledResource("demo/README.md");
    if (!readme) return {};
    const QString text = readFile(*readme);
    const qsizetype start = text.indexOf(QStringLiteral("## Licence"));
    if (start < 0) return {};
    const qsizetype end = text.indexOf(QStringLiteral("\n## "), start + 1);
    return text.mid(start + 10, end < 0 ? -1 : end - start - 10).trimmed();
}

QString bundledModelsHtml() {
    QString html;
    if (const QString demo = demoLicence(); !demo.isEmpty())
        html += QStringLiteral("<h4>Demo model (resources/demo)</h4><p>%1</p>").arg(demo.toHtmlEscaped());
    const auto models = pipeline::bundledResource("models");
    if (!models || !std::filesystem::is_directory(*models)) return html;
    for (const auto& entry : std::filesystem::directory_iterator(*models)) {
        const std::filesystem::path licence = entry.path() / "LICENSE";
        if (!std::filesystem::exists(licence)) continue;
        html += QStringLiteral("<h4>%1 (resources/models)</h4><pre>%2</pre>")
                    .arg(QString::fromStdString(entry.path().filename().string()).toHtmlEscaped(),
                         readFile(licence).trimmed().toHtmlEscaped());
    }
    return html;
}

}  // namespace

AboutDialog::AboutDialog(std::optional<DeviceReport> device, QWidget* parent)
    : QDialog(parent), device_(std::move(device)), body_(new QTextBrowser(this)) {
    setWindowTitle(tr("About QuantScope"));
    resize(640, 560);
    body_->setOpenExternalLinks(true);
    fill();
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(body_);
    layout->addWidget(buttons);
}

QString AboutDialog::versionText() { return tr("QuantScope %1").arg(QStringLiteral(QS_VERSION)); }

QString AboutDialog::backendText(const std::optional<DeviceReport>& device) {
    // What a job's "Auto" device would run on: the GPU's name and free memory, or the CPU and why.
    return device ? device->message : tr("checking the GPU against the CPU…");
}

void AboutDialog::showDevice(const DeviceReport& device) {
    device_ = device;
    fill();
}

void AboutDialog::fill() {
    body_->setHtml(QStringLiteral("<h2>%1</h2><p>%2</p><p><b>%3</b> %4</p>%5")
                       .arg(versionText().toHtmlEscaped(),
                            tr("Inspect, quantize and compare LLM checkpoints.").toHtmlEscaped(),
                            tr("Backend:").toHtmlEscaped(), backendText(device_).toHtmlEscaped(), licencesHtml()));
}

QString AboutDialog::licencesHtml() {
    QString html = tr("<h3>Bundled models and data</h3>") + bundledModelsHtml();
    html += tr("<h3>Libraries</h3><table cellpadding='3'>");
    for (const LibraryLicence& l : kLibraries)
        html += QStringLiteral("<tr><td>%1</td><td><b>%2</b></td><td>%3</td></tr>")
                    .arg(QLatin1String(l.library), QLatin1String(l.licence), tr(l.use));
    return html + QStringLiteral("</table>");
}

QString AboutDialog::text() const { return body_->toPlainText(); }

}  // namespace qs::gui
