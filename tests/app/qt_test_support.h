#pragma once
// What every app test needs: one QApplication on the offscreen platform, settings that never touch
// the user's, and waiting for background jobs without blocking the event loop.
#include <functional>

#include <QApplication>
#include <QElapsedTimer>
#include <QStandardPaths>
#include <QThread>
#include <gtest/gtest.h>

namespace qs::gui::test {

inline const QString kStories = QStringLiteral(QS_RESOURCES_DIR "/models/stories260K");
inline const QString kDemo = QStringLiteral(QS_RESOURCES_DIR "/demo");   // the Qwen3 demo with its texts

class QtAppTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (QApplication::instance()) return;
        qputenv("QT_QPA_PLATFORM", "offscreen");
        QStandardPaths::setTestModeEnabled(true);
        static int argc = 1;
        static char name[] = "app_tests";
        static char* argv[] = {name, nullptr};
        // One QApplication per process, kept until exit: tests in every suite share it.
        new QApplication(argc, argv);
        QApplication::setOrganizationName(QStringLiteral("QuantScopeTests"));
        QApplication::setApplicationName(QStringLiteral("app_tests"));
    }
};

// Runs the event loop until `done` holds; false after `timeoutMs`.
inline bool waitUntil(const std::function<bool()>& done, int timeoutMs = 30000) {
    QElapsedTimer timer;
    timer.start();
    while (!done()) {
        if (timer.elapsed() > timeoutMs) return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QThread::msleep(2);
    }
    return true;
}

}  // namespace qs::gui::test
