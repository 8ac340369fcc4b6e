#include "progress_bar.h"

#include <algorithm>
#include <cmath>

#include <unistd.h>

namespace qs::cli {
namespace {

constexpr double kQuietSeconds = 1.0;   // operations shorter than this draw nothing
constexpr double kRedrawSeconds = 0.1;  // terminal redraw rate limit
constexpr int kBarWidth = 30;
constexpr std::size_t kMessageWidth = 40;

std::string bar(double fraction) {
    const int filled = static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * kBarWidth));
    return std::string(static_cast<std::size_t>(filled), '#') +
           std::string(static_cast<std::size_t>(kBarWidth - filled), '-');
}

// Long tensor names would wrap the line and break the in-place redraw; keep their tail.
std::string shortMessage(const std::string& message) {
    if (message.size() <= kMessageWidth) return message;
    return "..." + message.substr(message.size() - (kMessageWidth - 3));
}

}  // namespace

ProgressBar::ProgressBar(std::string label, std::FILE* stream)
    : label_(std::move(label)),
      stream_(stream),
      terminal_(isatty(fileno(stream)) != 0),
      start_(Clock::now()),
      lastDraw_(start_) {}

ProgressBar::~ProgressBar() { finish(false); }

qs::ProgressCallback ProgressBar::callback() {
    return [this](const qs::Progress& progress) { update(progress); };
}

double ProgressBar::elapsedSeconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void ProgressBar::update(const qs::Progress& progress) {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    last_ = progress;
    // Where a resumed run picks up, which hidden states stream from disk and in what the calibration
    // multiplies: said once, on its own line.
    if (progress.stage == "resume" || progress.stage == "spill" || progress.stage == "matmul") {
        if (progress.stage == "resume")
            resumedFraction_ = std::clamp(progress.fraction, 0.0, 1.0);  // the rate counts from here
        std::fprintf(stream_, "%s%s: %s\n", terminal_ && drawn_ ? "\r\033[K" : "", label_.c_str(),
                     progress.message.c_str());
        std::fflush(stream_);
        return;
    }
    if (elapsedSeconds() < kQuietSeconds) return;
    if (terminal_) {
        drawInPlace(progress);
    } else {
        drawLine(progress);
    }
}

void ProgressBar::drawInPlace(const qs::Progress& progress) {
    const auto now = Clock::now();
    if (drawn_ && std::chrono::duration<double>(now - lastDraw_).count() < kRedrawSeconds) return;
    lastDraw_ = now;
    drawn_ = true;
    const double elapsed = elapsedSeconds();
    const double fraction = std::clamp(progress.fraction, 0.0, 1.0);
    const double done = fraction - resumedFraction_;  // this process's share of the work
    const double eta = done > 0.0 ? elapsed * (1.0 - fraction) / done : 0.0;
    // \033[K clears what a longer previous message left at the end of the line.
    std::fprintf(stream_, "\r%s [%s] %5.1f%%  %.1fs, eta %.0fs  %s\033[K", label_.c_str(), bar(fraction).c_str(),
                 fraction * 100.0, elapsed, eta, shortMessage(progress.message).c_str());
    std::fflush(stream_);
}

void ProgressBar::drawLine(const qs::Progress& progress) {
    const int decile = static_cast<int>(std::clamp(progress.fraction, 0.0, 1.0) * 10.0);
    if (decile <= lastDecile_) return;
    lastDecile_ = decile;
    drawn_ = true;
    std::fprintf(stream_, "%s: %3d%% (%.1fs)\n", label_.c_str(), decile * 10, elapsedSeconds());
    std::fflush(stream_);
}

void ProgressBar::finish(bool completed) {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
    if (!drawn_ || !terminal_) return;
    if (completed) {
        std::fprintf(stream_, "\r%s [%s] 100.0%%  %.1fs\033[K", label_.c_str(), bar(1.0).c_str(), elapsedSeconds());
    }
    std::fputc('\n', stream_);
    std::fflush(stream_);
}

}  // namespace qs::cli
