#pragma once
// ProgressBar: shows qs::Progress on stderr. It stays silent for the first second, so
// quick commands (and their tests) print nothing; after that it redraws one line in place when
// stderr is a terminal, and otherwise writes one line per 10 % so that logs stay readable.
// update() may be called from any thread.
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

#include "qs/progress.h"

namespace qs::cli {

class ProgressBar {
public:
    explicit ProgressBar(std::string label, std::FILE* stream = stderr);
    ~ProgressBar();
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    void update(const qs::Progress& progress);
    qs::ProgressCallback callback();  // forwards to update(); valid while this bar lives
    // Ends the bar: on a terminal the line is completed (100 % when `completed`) and closed with a
    // newline, so whatever is printed next starts on a fresh line. Called by the destructor.
    void finish(bool completed = true);

private:
    using Clock = std::chrono::steady_clock;
    double elapsedSeconds() const;
    void drawInPlace(const qs::Progress& progress);
    void drawLine(const qs::Progress& progress);

    std::string label_;
    std::FILE* stream_;
    bool terminal_;
    Clock::time_point start_;
    double resumedFraction_ = 0.0;  // what a resumed run had done before this process started
    Clock::time_point lastDraw_;
    qs::Progress last_;
    int lastDecile_ = -1;
    bool drawn_ = false;
    bool finished_ = false;
    std::mutex mutex_;
};

}  // namespace qs::cli
