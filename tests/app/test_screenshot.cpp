#include <QImage>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>

#include "qt_test_support.h"

namespace qs::gui::test {
namespace {

struct ProcessResult {
    int exitCode = -1;
    QString stderrText;
};

ProcessResult runQuantscope(const QStringList& arguments) {
    QProcess process;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    process.setProcessEnvironment(env);
    process.start(QStringLiteral(QS_QUANTSCOPE_EXE), arguments);
    if (!process.waitForFinished(180000)) {
        process.kill();
        return {};
    }
    return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
            QString::fromUtf8(process.readAllStandardError())};
}

// Pixels close to `colour`: bars were drawn, not just axes.
int pixelsNear(const QImage& image, const QColor& colour) {
    int count = 0;
    for (int y = 0; y < image.height(); ++y) {
        for (int x = 0; x < image.width(); ++x) {
            const QColor c = image.pixelColor(x, y);
            count += std::abs(c.red() - colour.red()) < 6 && std::abs(c.green() - colour.green()) < 6 &&
                     std::abs(c.blue() - colour.blue()) < 6;
        }
    }
    return count;
}

int barPixels(const QImage& image) { return pixelsNear(image, QColor(70, 130, 180)); }  // the histogram's bars

class ScreenshotTest : public QtAppTest {
protected:
    QTemporaryDir dir;
};

TEST_F(ScreenshotTest, WritesTheWindowWithAHistogram) {
    const QString png = dir.filePath(QStringLiteral("shot.png"));
    const ProcessResult run = runQuantscope({QStringLiteral("--screenshot"), png, kStories});
    ASSERT_EQ(run.exitCode, 0) << run.stderrText.toStdString();
    const QImage image(png);
    ASSERT_FALSE(image.isNull());
    EXPECT_EQ(image.size(), QSize(1400, 900));
    EXPECT_GT(barPixels(image), 2000);
}

TEST_F(ScreenshotTest, OtherTabsRenderToo) {
    for (const QString& tab : {QStringLiteral("channels"), QStringLiteral("Overview")}) {  // any case, as the tab reads
        const QString png = dir.filePath(tab + QStringLiteral(".png"));
        const ProcessResult run =
            runQuantscope({QStringLiteral("--screenshot"), png, QStringLiteral("--tab"), tab, kStories});
        ASSERT_EQ(run.exitCode, 0) << tab.toStdString() << ": " << run.stderrText.toStdString();
        EXPECT_EQ(QImage(png).size(), QSize(1400, 900)) << tab.toStdString();
    }
}

TEST_F(ScreenshotTest, QuantizeShowsTheJobsResults) {
    const QString png = dir.filePath(QStringLiteral("results.png"));
    const ProcessResult run = runQuantscope(
        {QStringLiteral("--screenshot"), png, QStringLiteral("--quantize"), QStringLiteral(QS_RESOURCES_DIR "/demo")});
    ASSERT_EQ(run.exitCode, 0) << run.stderrText.toStdString();
    const QImage image(png);
    ASSERT_FALSE(image.isNull());
    // The panel's default methods are RTN and FP8: the second series' bar (orange) is on the Results page.
    EXPECT_GT(pixelsNear(image, QColor(242, 142, 43)), 500);
    EXPECT_EQ(barPixels(image), 0) << "the histogram is showing, not the results";
}

TEST_F(ScreenshotTest, AQuantizationThatFailsExitsWithTwo) {
    // stories260K comes without a tokenizer.json: its calibration text cannot be tokenized.
    const ProcessResult run = runQuantscope({QStringLiteral("--screenshot"), dir.filePath(QStringLiteral("f.png")),
                                             QStringLiteral("--quantize"), kStories});
    EXPECT_EQ(run.exitCode, 2);
    EXPECT_TRUE(run.stderrText.contains(QStringLiteral("tokenizer"))) << run.stderrText.toStdString();
}

TEST_F(ScreenshotTest, ABadCheckpointExitsWithTheCoreMessage) {
    const QString png = dir.filePath(QStringLiteral("bad.png"));
    const ProcessResult run =
        runQuantscope({QStringLiteral("--screenshot"), png, dir.filePath(QStringLiteral("nothing-here"))});
    EXPECT_EQ(run.exitCode, 2);
    EXPECT_TRUE(run.stderrText.contains(QStringLiteral("nothing-here"))) << run.stderrText.toStdString();
    EXPECT_FALSE(QFile::exists(png));
}

TEST_F(ScreenshotTest, GgufMethodsRunFromTheCommandLineAndTheExportPanelShows) {
    const QString png = dir.filePath(QStringLiteral("gguf.png"));
    const ProcessResult run =
        runQuantscope({QStringLiteral("--screenshot"), png, QStringLiteral("--quantize"), QStringLiteral("--methods"),
                       QStringLiteral("gptq4,q4_k_m"), QStringLiteral("--tab"), QStringLiteral("export"),
                       QStringLiteral(QS_RESOURCES_DIR "/demo")});
    ASSERT_EQ(run.exitCode, 0) << run.stderrText.toStdString();
    const QImage image(png);
    // The Quantize panel with its GGUF rows still fits the window's 900 pixels.
    EXPECT_EQ(image.size(), QSize(1400, 900));
    EXPECT_GT(pixelsNear(image, QColor(242, 142, 43)), 500) << "no bar for q4_k_m, the second series";

    const ProcessResult unknown = runQuantscope({QStringLiteral("--screenshot"), dir.filePath(QStringLiteral("u.png")),
                                                 QStringLiteral("--methods"), QStringLiteral("q4_k_x"), kStories});
    EXPECT_EQ(unknown.exitCode, 2);
    EXPECT_TRUE(unknown.stderrText.contains(QStringLiteral("--methods"))) << unknown.stderrText.toStdString();
}

// --help and --version answer without a display (a QApplication without one aborts).
TEST_F(ScreenshotTest, HelpAndVersionNeedNoDisplay) {
    for (const QString& option : {QStringLiteral("--help"), QStringLiteral("--version")}) {
        QProcess process;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));
        env.remove(QStringLiteral("DISPLAY"));
        env.remove(QStringLiteral("WAYLAND_DISPLAY"));
        process.setProcessEnvironment(env);
        process.start(QStringLiteral(QS_QUANTSCOPE_EXE), {option});
        ASSERT_TRUE(process.waitForFinished(60000)) << option.toStdString();
        EXPECT_EQ(process.exitStatus(), QProcess::NormalExit) << option.toStdString();
        EXPECT_EQ(process.exitCode(), 0) << option.toStdString() << ": "
                                         << process.readAllStandardError().toStdString();
        const QString out = QString::fromUtf8(process.readAllStandardOutput());
        EXPECT_TRUE(out.contains(option == QStringLiteral("--help") ? QStringLiteral("--screenshot")
                                                                    : QStringLiteral("QuantScope ")))
            << out.toStdString();
    }
}

TEST_F(ScreenshotTest, UnknownTabIsAnError) {
    const ProcessResult run = runQuantscope({QStringLiteral("--screenshot"), dir.filePath(QStringLiteral("x.png")),
                                             QStringLiteral("--tab"), QStringLiteral("nope"), kStories});
    EXPECT_EQ(run.exitCode, 2);
}

}  // namespace
}  // namespace qs::gui::test
