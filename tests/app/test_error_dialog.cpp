#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <QMessageBox>
#include <QTemporaryDir>
#include <QTimer>

#include "qs/error.h"
#include "qs/io/checkpoint.h"

#include "qt_test_support.h"
#include "window/main_window.h"
#include "window/message_box_error_reporter.h"

namespace qs::gui::test {
namespace {

struct Report {
    QString title;
    QString message;
};

class RecordingErrorReporter : public ErrorReporter {
public:
    void report(const QString& title, const QString& message) override { reports.push_back({title, message}); }
    std::vector<Report> reports;
};

// The core's own words for why `path` cannot be opened.
QString coreMessage(const QString& path) {
    try {
        io::Checkpoint::open(path.toStdString());
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

class ErrorDialogTest : public QtAppTest {
protected:
    // A header length of 2^40 in a 12-byte file: the reader must refuse it, not allocate it.
    QString writeMalformed() {
        const QString path = dir.filePath(QStringLiteral("broken.safetensors"));
        std::ofstream out(path.toStdString(), std::ios::binary);
        const unsigned char bytes[12] = {0, 0, 0, 0, 0, 1, 0, 0, '{', '}', ' ', ' '};
        out.write(reinterpret_cast<const char*>(bytes), sizeof bytes);
        return path;
    }

    QTemporaryDir dir;
    MainWindow window{MainWindow::Settings::Ignore};
};

TEST_F(ErrorDialogTest, MalformedFileReportsTheCoreMessageAndKeepsTheOpenCheckpoint) {
    auto reporter = std::make_shared<RecordingErrorReporter>();
    window.setErrorReporter(reporter);
    ASSERT_TRUE(window.openPath(kStories));
    const QString path = writeMalformed();
    const QString expected = coreMessage(path);
    ASSERT_FALSE(expected.isEmpty());

    EXPECT_FALSE(window.openPath(path));
    ASSERT_EQ(reporter->reports.size(), 1u);
    EXPECT_EQ(reporter->reports[0].message, expected);
    EXPECT_TRUE(reporter->reports[0].message.contains(QStringLiteral("broken.safetensors")));
    ASSERT_NE(window.checkpoint(), nullptr);
    EXPECT_EQ(window.checkpoint()->tensors().size(), 47u);
}

TEST_F(ErrorDialogTest, MissingPathIsReportedNotThrown) {
    auto reporter = std::make_shared<RecordingErrorReporter>();
    window.setErrorReporter(reporter);
    EXPECT_FALSE(window.openPath(dir.filePath(QStringLiteral("does-not-exist"))));
    ASSERT_EQ(reporter->reports.size(), 1u);
    EXPECT_FALSE(reporter->reports[0].message.isEmpty());
    EXPECT_EQ(window.checkpoint(), nullptr);
}

TEST_F(ErrorDialogTest, DefaultReporterShowsAMessageBoxWithTheCoreText) {
    const QString path = writeMalformed();
    QString shown;
    int attempts = 0;
    // The dialog is modal: find it from a timer while openPath() waits in its event loop.
    QTimer finder;
    finder.setInterval(20);
    QObject::connect(&finder, &QTimer::timeout, [&] {
        ++attempts;
        for (QWidget* w : QApplication::topLevelWidgets()) {
            auto* box = qobject_cast<QMessageBox*>(w);
            if (!box || box->objectName() != QLatin1String(MessageBoxErrorReporter::kDialogObjectName) ||
                !box->isVisible())
                continue;
            shown = box->text();
            box->accept();
            finder.stop();
            return;
        }
        if (attempts > 500) finder.stop();
    });
    finder.start();
    window.show();
    EXPECT_FALSE(window.openPath(path));
    EXPECT_EQ(shown, coreMessage(path));
}

}  // namespace
}  // namespace qs::gui::test
