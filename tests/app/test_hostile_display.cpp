// What the window shows of hostile input (issue 21): a tensor's NaN and Inf values are counted and
// shown beside its histogram, and any failure message reaches the dialog and the status bar as one
// sanitised line, whatever it quotes.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include <QStatusBar>
#include <QTemporaryDir>

#include "qs/io/checkpoint_writer.h"

#include "pages/histogram_page.h"
#include "panels/export_panel.h"
#include "qt_test_support.h"
#include "recording_reporter.h"
#include "window/error_reporter.h"
#include "window/main_window.h"

namespace qs::gui::test {
namespace {

class HostileDisplayTest : public QtAppTest {
protected:
    QTemporaryDir dir;
    MainWindow window{MainWindow::Settings::Ignore};
};

TEST_F(HostileDisplayTest, NonFiniteValuesOfATensorAreCountedAndShown) {
    std::vector<float> values(64 * 32);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::sin(static_cast<float>(i)) * 0.02f;
    values[3] = std::nanf("");
    values[40] = INFINITY;
    values[41] = -INFINITY;
    const std::filesystem::path path = dir.filePath(QStringLiteral("nan")).toStdString();
    {
        io::CheckpointWriter writer(path);
        writer.addTensorF32("model.layers.0.mlp.down_proj.weight", io::DType::F32, {64, 32}, values);
        writer.finish();
    }
    window.show();  // pages compute only while visible
    ASSERT_TRUE(window.openPath(QString::fromStdString(path.string())));
    window.selectTensor(QStringLiteral("model.layers.0.mlp.down_proj.weight"));
    ASSERT_TRUE(waitUntil([this] { return !window.isBusy(); }));
    HistogramPage& page = *window.histogramPage();
    ASSERT_TRUE(page.histogram().has_value());
    EXPECT_EQ(page.histogram()->nonFinite, 3u);
    EXPECT_EQ(page.histogram()->count, 64u * 32u - 3u);
    EXPECT_TRUE(page.statsText().contains(QStringLiteral("(+3 NaN/Inf left out)"))) << page.statsText().toStdString();
}

TEST_F(HostileDisplayTest, FailureMessagesAreOneSanitisedLine) {
    auto reporter = std::make_shared<RecordingReporter>();
    window.setErrorReporter(reporter);
    auto* panel = window.findChild<ExportPanel*>();
    ASSERT_NE(panel, nullptr);
    emit panel->failed(QStringLiteral("tensor 'a\nQuantScope: forged'\x1b[2J"));
    ASSERT_EQ(reporter->reports.size(), 1u);
    EXPECT_EQ(reporter->reports[0].toStdString(), "Export failed: tensor 'a\\nQuantScope: forged'\\x1b[2J");
    EXPECT_EQ(window.statusBar()->currentMessage().toStdString(), "tensor 'a\\nQuantScope: forged'\\x1b[2J");
}

}  // namespace
}  // namespace qs::gui::test
