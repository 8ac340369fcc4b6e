#pragma once
// --screenshot: waits until the visible page has finished computing (or a timeout), renders the
// window into a PNG and quits the event loop with an exit code.
#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

namespace qs::gui {

class MainWindow;

class ScreenshotTaker : public QObject {
    Q_OBJECT

public:
    ScreenshotTaker(MainWindow* window, QString path, int timeoutMs, QObject* parent = nullptr);
    void start();

private:
    void poll();
    void save(bool timedOut);

    MainWindow* window_;
    QString path_;
    int timeoutMs_;
    int idlePolls_ = 0;
    QTimer timer_;
    QElapsedTimer elapsed_;
};

}  // namespace qs::gui
