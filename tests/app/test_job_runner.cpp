#include <atomic>
#include <chrono>
#include <thread>

#include "qs/error.h"

#include "jobs/job_runner.h"
#include "qt_test_support.h"

namespace qs::gui::test {
namespace {

class JobRunnerTest : public QtAppTest {};

TEST_F(JobRunnerTest, ANewerJobCancelsTheOlderAndOnlyItsResultArrives) {
    JobRunner runner;
    std::atomic<bool> firstSawCancel{false};
    int firstDelivered = 0;
    int secondResult = 0;
    runner.start(
        [&](const qs::CancelToken& token) {
            for (int i = 0; i < 5000 && !token.cancelled(); ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            firstSawCancel = token.cancelled();
            token.throwIfCancelled();
            return 1;
        },
        [&](int) { ++firstDelivered; }, [](const QString&) {});
    EXPECT_TRUE(runner.isBusy());
    runner.start([](const qs::CancelToken&) { return 42; }, [&](int v) { secondResult = v; }, [](const QString&) {});

    ASSERT_TRUE(waitUntil([&] { return !runner.isBusy(); }));
    EXPECT_EQ(secondResult, 42);
    ASSERT_TRUE(waitUntil([&] { return firstSawCancel.load(); }));
    QCoreApplication::processEvents();
    EXPECT_EQ(firstDelivered, 0);
}

TEST_F(JobRunnerTest, ErrorsArriveAsMessages) {
    JobRunner runner;
    QString message;
    bool delivered = false;
    runner.start([](const qs::CancelToken&) -> int { throw Error("tensor 'x' in f.safetensors: bad"); },
                 [&](int) { delivered = true; }, [&](const QString& m) { message = m; });
    ASSERT_TRUE(waitUntil([&] { return !runner.isBusy(); }));
    EXPECT_FALSE(delivered);
    EXPECT_EQ(message, "tensor 'x' in f.safetensors: bad");
}

TEST_F(JobRunnerTest, CancelDropsTheResult) {
    JobRunner runner;
    bool delivered = false;
    runner.start(
        [](const qs::CancelToken&) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            return 1;
        },
        [&](int) { delivered = true; }, [](const QString&) {});
    runner.cancel();
    EXPECT_FALSE(runner.isBusy());
    QElapsedTimer timer;
    timer.start();
    waitUntil([&] { return timer.elapsed() > 200; });
    EXPECT_FALSE(delivered);
}

}  // namespace
}  // namespace qs::gui::test
