#include "jobs/remaining_time.h"

#include <algorithm>

namespace qs::gui {

double RemainingTime::update(double fraction, double elapsedSeconds) {
    fraction = std::clamp(fraction, 0.0, 1.0);
    if (!first_) {
        if (fraction > 0.0) first_ = last_ = Point{fraction, elapsedSeconds};
    } else if (fraction > last_->fraction && elapsedSeconds > last_->seconds) {
        last_ = Point{fraction, elapsedSeconds};
        ++finished_;
    }
    const std::optional<double> measured = measuredSecondsPerJob();
    double perJob = -1.0;
    if (measured && estimate_ > 0.0) {
        const double weight = finished_ / (finished_ + kPriorReports);
        perJob = weight * *measured + (1.0 - weight) * estimate_;
    } else if (measured) {
        perJob = *measured;
    } else if (estimate_ > 0.0) {
        perJob = estimate_;
    }
    if (perJob < 0.0) return -1.0;
    // Since the last report that finished work the clock has run on: that time is part of what is left
    // of the current step, not more to add.
    const double sinceLast = last_ ? std::max(0.0, elapsedSeconds - last_->seconds) : 0.0;
    return std::max(0.0, (1.0 - fraction) * perJob - sinceLast);
}

std::optional<double> RemainingTime::measuredSecondsPerJob() const {
    if (!first_ || finished_ == 0) return std::nullopt;
    return (last_->seconds - first_->seconds) / (last_->fraction - first_->fraction);
}

}  // namespace qs::gui
