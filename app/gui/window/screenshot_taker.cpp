#include "window/screenshot_taker.h"

#include <cstdio>

#include <QCoreApplication>
#include <QPixmap>

#include "window/main_window.h"

namespace qs::gui {
namespace {

constexpr int kPollMs = 50;
constexpr int kIdlePollsNeeded = 3;  // idle for a few polls: late queued results and repaints land

}  // namespace

ScreenshotTaker::ScreenshotTaker(MainWindow* window, QString path, int timeoutMs, QObject* parent)
    : QObject(parent), window_(window), path_(std::move(path)), timeoutMs_(timeoutMs) {
    timer_.setInterval(kPollMs);
    connect(&timer_, &QTimer::timeout, this, &ScreenshotTaker::poll);
}

void ScreenshotTaker::start() {
    elapsed_.start();
    timer_.start();
}

void ScreenshotTaker::poll() {
    if (elapsed_.elapsed() > timeoutMs_) {
        save(true);
        return;
    }
    idlePolls_ = window_->isBusy() ? 0 : idlePolls_ + 1;
    if (idlePolls_ >= kIdlePollsNeeded) save(false);
}

void ScreenshotTaker::save(bool timedOut) {
    timer_.stop();
    if (timedOut) {
        std::fprintf(stderr, "quantscope: the view was still computing after %d ms; saving it as it is\n", timeoutMs_);
    }
    const QPixmap picture = window_->grab();
    if (picture.isNull() || !picture.save(path_, "PNG")) {
        std::fprintf(stderr, "quantscope: cannot write the screenshot %s\n", qUtf8Printable(path_));
        QCoreApplication::exit(1);
        return;
    }
    QCoreApplication::exit(0);
}

}  // namespace qs::gui
