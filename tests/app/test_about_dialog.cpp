// Help ▸ About: version, backend and the licences of what ships.
#include <QRegularExpression>

#include "qs/eigen.h"

#include "qt_test_support.h"
#include "window/about_dialog.h"

namespace qs::gui::test {
namespace {

class AboutDialogTest : public QtAppTest {};

TEST_F(AboutDialogTest, NamesVersionBackendAndEveryLicence) {
    DeviceProbe probe;
    probe.start();
    ASSERT_TRUE(waitUntil([&] { return probe.isDone(); }));
    AboutDialog about(probe.report());
    const QString text = about.text();
    EXPECT_TRUE(text.contains(QRegularExpression(QStringLiteral("QuantScope \\d+\\.\\d+")))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("CPU"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("%1 thread").arg(Eigen::nbThreads()))) << text.toStdString();
    // The bundled models: stories260K's own LICENSE file and the demo's README section.
    EXPECT_TRUE(text.contains(QStringLiteral("stories260K")));
    EXPECT_TRUE(text.contains(QStringLiteral("MIT License")));
    EXPECT_TRUE(text.contains(QStringLiteral("public domain")));
    for (const char* licence : {"LGPL-3.0", "GPL-3.0", "MPL-2.0", "MIT", "BSD-3-Clause"})
        EXPECT_TRUE(text.contains(QLatin1String(licence))) << licence;
    for (const char* library : {"Qt 6", "QCustomPlot", "Eigen", "nlohmann/json", "PCRE2", "CLI11"})
        EXPECT_TRUE(text.contains(QLatin1String(library))) << library;
}

// Opened while the window's probe is still out: it says so, and shows the answer when it comes.
TEST_F(AboutDialogTest, ShowsTheDeviceWhenTheProbeAnswers) {
    AboutDialog about(std::nullopt);
    EXPECT_TRUE(about.text().contains(QStringLiteral("checking the GPU"))) << about.text().toStdString();
    about.showDevice({false, {}, QStringLiteral("device: CPU (3 threads) (no CUDA device)")});
    EXPECT_TRUE(about.text().contains(QStringLiteral("device: CPU (3 threads) (no CUDA device)")))
        << about.text().toStdString();
    EXPECT_FALSE(about.text().contains(QStringLiteral("checking the GPU")));
}

}  // namespace
}  // namespace qs::gui::test
