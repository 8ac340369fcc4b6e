#pragma once
// RemainingTime: the status line's time left for a running job, from the rate of the work it has
// finished. The overall fraction over the elapsed time since the start counts the opening and the
// embedding as if they were module work, so the ETA first stalls then rises; here the rate is measured
// from the first report on (seconds per fraction of the job between reports), and blended with the
// plan's estimate (the Quantize panel's) while few reports have come, the estimate weighing as much as
// kPriorReports of them.
#include <optional>

namespace qs::gui {

class RemainingTime {
public:
    static constexpr double kPriorReports = 2.0;

    // `estimatedSeconds`: the whole job's predicted time; 0 when there is none.
    explicit RemainingTime(double estimatedSeconds = 0.0) : estimate_(estimatedSeconds) {}

    // A progress report: `fraction` (0..1) of the job done `elapsedSeconds` after its start. Returns the
    // seconds left; negative while nothing tells (no estimate and no work finished yet).
    double update(double fraction, double elapsedSeconds);

    // Seconds per whole job at the measured rate of finished work; nullopt before two reports apart.
    std::optional<double> measuredSecondsPerJob() const;

private:
    struct Point {
        double fraction;
        double seconds;
    };
    double estimate_;
    std::optional<Point> first_;  // the first report with work done
    std::optional<Point> last_;   // the latest report that finished more work
    int finished_ = 0;            // reports that finished more work since first_
};

}  // namespace qs::gui
