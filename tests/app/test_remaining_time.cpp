// The ETA from the rate of finished work, on fake progress streams with a fake clock: a job that
// spends its first seconds opening and embedding, then finishes modules at a steady rate. The time
// left it states is compared with the stream's true remaining time.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "jobs/job_progress_text.h"
#include "jobs/remaining_time.h"

namespace qs::gui::test {
namespace {

struct Report {
    double fraction;
    double seconds;
    double trueLeft;
};

// `startup` seconds before the first report (fraction 0.02), then `modules` steps of `perModule`
// seconds each to fraction 1.
std::vector<Report> steadyJob(double startup, int modules, double perModule) {
    std::vector<Report> stream;
    const double total = startup + modules * perModule;
    for (int m = 0; m <= modules; ++m) {
        const double seconds = startup + m * perModule;
        stream.push_back({0.02 + 0.98 * m / modules, seconds, total - seconds});
    }
    return stream;
}

TEST(RemainingTime, ConvergesToTheRateOfFinishedWorkFromAWrongEstimate) {
    for (const double estimate : {46.0, 184.0}) {  // the plan's estimate 2x too low, 2x too high (92 s)
        RemainingTime eta(estimate);
        const auto stream = steadyJob(12.0, 40, 2.0);  // 92 s in all
        for (std::size_t i = 0; i < stream.size(); ++i) {
            const double left = eta.update(stream[i].fraction, stream[i].seconds);
            ASSERT_GE(left, 0.0) << "report " << i;  // the estimate speaks before any work is done
            const double tolerance = i >= 30 ? 0.08 : i >= 20 ? 0.12 : i >= 10 ? 0.25 : 1.5;
            EXPECT_NEAR(left, stream[i].trueLeft, tolerance * stream[i].trueLeft + 1e-9)
                << "estimate " << estimate << ", report " << i;
        }
        // The measured rate is the modules' own: 2 s per 0.98 / 40 of the job, the 12 s of start-up aside.
        ASSERT_TRUE(eta.measuredSecondsPerJob().has_value());
        EXPECT_NEAR(*eta.measuredSecondsPerJob(), 2.0 * 40 / 0.98, 1e-9);
    }
}

// The old ETA, elapsed · (1 − f) / f, counted the start-up as work: 12 s for 2 % read as 588 s left.
// With the plan's estimate right, the time left only ever falls, by the seconds that passed.
TEST(RemainingTime, NeverRisesWhenTheWorkIsSteady) {
    RemainingTime eta(92.0);
    double previous = INFINITY;
    for (const Report& r : steadyJob(12.0, 40, 2.0)) {
        const double left = eta.update(r.fraction, r.seconds);
        EXPECT_LE(left, previous + 1e-9) << "at " << r.seconds << " s";
        EXPECT_NEAR(left, r.trueLeft, 0.15 * r.trueLeft + 1e-9) << "at " << r.seconds << " s";
        previous = left;
    }
}

TEST(RemainingTime, CountsDownBetweenReportsAndWaitsWithoutAnything) {
    RemainingTime none;
    EXPECT_LT(none.update(0.0, 1.0), 0.0);
    EXPECT_LT(none.update(0.1, 5.0), 0.0);                 // one point: no rate yet
    EXPECT_NEAR(none.update(0.2, 9.0), 0.8 * 40.0, 1e-9);  // 4 s per tenth
    // Reports that finish nothing (a message) do not stall the count: 3 s later, 3 s less.
    EXPECT_NEAR(none.update(0.2, 12.0), 0.8 * 40.0 - 3.0, 1e-9);
    EXPECT_EQ(none.update(1.0, 45.0), 0.0);
}

TEST(RemainingTime, TheStatusLineSaysIt) {
    qs::Progress p;
    p.stage = "quantize";
    p.step = 3;
    p.steps = 28;
    p.fraction = 0.42;
    EXPECT_TRUE(progressText(p, 80.0).endsWith(QStringLiteral("ETA 1 min 20 s")))
        << progressText(p, 80.0).toStdString();
    EXPECT_TRUE(progressText(p, -1.0).endsWith(QStringLiteral("ETA …")));
}

}  // namespace
}  // namespace qs::gui::test
