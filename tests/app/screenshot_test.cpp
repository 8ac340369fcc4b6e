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

// Pixels close to the histogram's bar colour (70, 130, 180): bars were drawn, not just axes.
int barPixels(const QImage& image) {
    int count = 0;
    for (int y = 0; y < image.height(); ++y) {
        for (int x = 0; x < image.width(); ++x) {
            const QColor c = image.pixelColor(x, y);
            count += std::abs(c.red() - 70) < 6 && std::abs(c.green() - 130) < 6 && std::abs(c.blue() - 180) < 6;
        }
    }
    return count;
}

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
    for (const QString& tab : {QStringLiteral("channels"), QStringLiteral("overview")}) {
        const QString png = dir.filePath(tab + QStringLiteral(".png"));
        const ProcessResult run = runQuantscope({QStringLiteral("--screenshot"), png, QStringLiteral("--tab"), tab, kStories});
        ASSERT_EQ(run.exitCode, 0) << tab.toStdString() << ": " << run.stderrText.toStdString();
        EXPECT_EQ(QImage(png).size(), QSize(1400, 900)) << tab.toStdString();
    }
}

TEST_F(ScreenshotTest, ABadCheckpointExitsWithTheCoreMessage) {
    const QString png = dir.filePath(QStringLiteral("bad.png"));
    const ProcessResult run = runQuantscope({QStringLiteral("--screenshot"), png, dir.filePath(QStringLiteral("nothing-here"))});
    EXPECT_EQ(run.exitCode, 2);
    EXPECT_TRUE(run.stderrText.contains(QStringLiteral("nothing-here"))) << run.stderrText.toStdString();
    EXPECT_FALSE(QFile::exists(png));
}

TEST_F(ScreenshotTest, UnknownTabIsAnError) {
    const ProcessResult run = runQuantscope({QStringLiteral("--screenshot"), dir.filePath(QStringLiteral("x.png")),
                                   QStringLiteral("--tab"), QStringLiteral("nope"), kStories});
    EXPECT_EQ(run.exitCode, 2);
}

}  // namespace
}  // namespace qs::gui::test
