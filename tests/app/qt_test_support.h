#pragma once
// What every app test needs: one QApplication on the offscreen platform, settings that never touch
// the user's, waiting for background jobs without blocking the event loop, and the Qt model tester
// around every item model a test drives.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QElapsedTimer>
#include <QSettings>
#include <QStandardPaths>
#include <QStringList>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>

namespace qs::gui::test {

inline const QString kStories = QStringLiteral(QS_RESOURCES_DIR "/models/stories260K");
inline const QString kDemo = QStringLiteral(QS_RESOURCES_DIR "/demo");  // the Qwen3 demo with its texts

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
        // Settings of windows that remember them go to a folder of this process, never the user's.
        static QTemporaryDir settings;
        for (const QSettings::Format format : {QSettings::NativeFormat, QSettings::IniFormat})
            QSettings::setPath(format, QSettings::UserScope, settings.path());
    }
};

// Keeps `model` under a QAbstractItemModelTester while it lives: the tester checks the model's
// structure at once and after every change it signals, and each violation it reports (a warning in
// the qt.modeltest category) fails the running test.
class ModelChecker {
public:
    explicit ModelChecker(QAbstractItemModel* model) {
        if (instances()++ == 0) previous() = qInstallMessageHandler(&ModelChecker::record);
        tester_ =
            std::make_unique<QAbstractItemModelTester>(model, QAbstractItemModelTester::FailureReportingMode::Warning);
    }
    ~ModelChecker() {
        tester_.reset();
        if (--instances() == 0) qInstallMessageHandler(previous());
    }
    ModelChecker(const ModelChecker&) = delete;
    ModelChecker& operator=(const ModelChecker&) = delete;

private:
    static void record(QtMsgType type, const QMessageLogContext& context, const QString& message) {
        if (context.category && QLatin1String(context.category) == QLatin1String("qt.modeltest"))
            ADD_FAILURE() << "QAbstractItemModelTester: " << message.toStdString();
        else if (previous())
            previous()(type, context, message);
    }
    static int& instances() {
        static int count = 0;
        return count;
    }
    static QtMessageHandler& previous() {
        static QtMessageHandler handler = nullptr;
        return handler;
    }

    std::unique_ptr<QAbstractItemModelTester> tester_;
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

// Records the longest interval between ticks of a 10 ms timer: how long the GUI thread was held. Time
// the thread spent ready but waiting for a CPU (other processes on a loaded machine) is not the window's
// doing and is taken off each interval: the kernel counts it per thread (/proc/thread-self/schedstat,
// second field, nanoseconds); where that file is missing the wall interval is kept as it is.
class StallMeter {
public:
    StallMeter() {
        timer_.setInterval(10);
        timer_.setTimerType(Qt::PreciseTimer);
        QObject::connect(&timer_, &QTimer::timeout, [this] {
            const qint64 queued = runQueueDelayNs();
            const qint64 gap = clock_.nsecsElapsed() - std::max<qint64>(queued - lastQueued_, 0);
            clock_.restart();
            lastQueued_ = queued;
            longest_ = std::max(longest_, gap / 1'000'000);
        });
        lastQueued_ = runQueueDelayNs();
        clock_.start();
        timer_.start();
    }
    void stop() { timer_.stop(); }
    qint64 longestGapMs() const { return longest_; }

private:
    static qint64 runQueueDelayNs() {
        std::ifstream in("/proc/thread-self/schedstat");
        qint64 onCpu = 0, waiting = 0;
        return in >> onCpu >> waiting ? waiting : 0;
    }

    QTimer timer_;
    QElapsedTimer clock_;
    qint64 lastQueued_ = 0;
    qint64 longest_ = 0;
};

}  // namespace qs::gui::test
