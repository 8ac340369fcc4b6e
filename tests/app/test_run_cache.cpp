// The run cache's rule (RunCache) on real work folders made by pipeline::WorkFolder, with locks held by
// this process and by another one (util-linux flock(1), standing for a second QuantScope): what
// cleanUp removes and keeps, which interrupted run takeInterrupted offers, and that startNew never
// hands out a folder that is in use or kept.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>

#include <QProcess>
#include <QTemporaryDir>

#include "qs/pipeline/work_folder.h"

#include "jobs/folder_lock.h"
#include "jobs/run_cache.h"
#include "qt_test_support.h"

namespace qs::gui::test {
namespace {
namespace fs = std::filesystem;

class RunCacheTest : public QtAppTest {
protected:
    // A work folder as a run leaves it after `layers` finished layers (0: it stopped before the first).
    fs::path makeRun(const std::string& name, int layers) {
        const fs::path folder = root / name;
        pipeline::WorkFolder work = pipeline::WorkFolder::start(folder, {{"run", name}});
        for (int l = 0; l < layers; ++l) {
            pipeline::LayerRecord record;
            record.facts["layer"] = l;
            record.hidden["x"] = {MatrixF::Constant(2, 3, float(l))};
            work.saveLayer(l, record, {{"calibration", {MatrixF::Constant(4, 3, 1.0f)}}});
        }
        return folder;
    }
    static void makeOld(const fs::path& path) {
        fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::hours(24 * 8));
    }
    static void markFinished(const fs::path& folder) {
        std::ofstream(RunLease::finishedMarkerOf(folder)) << "finished\n";
    }
    static std::shared_ptr<RunLease> hold(const fs::path& folder) {
        std::optional<FolderLock> lock = FolderLock::acquire(folder);
        return lock ? std::make_shared<RunLease>(folder, std::move(*lock)) : nullptr;
    }
    // Another process takes `folder`'s lock and keeps it until killed.
    static std::unique_ptr<QProcess> holdElsewhere(const fs::path& folder) {
        auto process = std::make_unique<QProcess>();
        // -o: only flock itself holds the lock, so that killing it releases it.
        process->start(QStringLiteral("flock"), {QStringLiteral("-o"), QStringLiteral("-n"),
                                                 QString::fromStdString(FolderLock::fileOf(folder).string()),
                                                 QStringLiteral("-c"), QStringLiteral("echo held; read line")});
        if (!process->waitForReadyRead(10000)) return nullptr;
        return process;
    }
    static void kill(QProcess& process) {
        process.kill();
        process.waitForFinished(10000);
    }

    QTemporaryDir scratch;
    fs::path root = fs::path(scratch.path().toStdString()) / "runs";
    RunCache cache{root};
};

TEST_F(RunCacheTest, AFolderLockIsExclusiveAndItsFileGoesWithIt) {
    const fs::path folder = root / "a-1";
    std::optional<FolderLock> lock = FolderLock::acquire(folder);
    ASSERT_TRUE(lock);
    EXPECT_TRUE(fs::exists(FolderLock::fileOf(folder)));
    EXPECT_FALSE(FolderLock::acquire(folder)) << "taken twice in one process";
    lock.reset();
    EXPECT_FALSE(fs::exists(FolderLock::fileOf(folder)));
    EXPECT_TRUE(FolderLock::acquire(folder));

    const auto other = holdElsewhere(folder);
    ASSERT_TRUE(other);
    EXPECT_FALSE(FolderLock::acquire(folder)) << "held by another process";
    kill(*other);
    EXPECT_TRUE(FolderLock::acquire(folder)) << "a dead process's lock stays taken";
}

TEST_F(RunCacheTest, CleanUpRemovesWhatTheRuleSaysAndNothingElse) {
    const fs::path finishedFree = makeRun("k1-1", 2);
    markFinished(finishedFree);
    const fs::path finishedShown = makeRun("k1-2", 2);
    markFinished(finishedShown);
    std::shared_ptr<RunLease> shown = hold(finishedShown);
    ASSERT_TRUE(shown);
    const fs::path interruptedRecent = makeRun("k2-1", 1);
    const fs::path interruptedOld = makeRun("k2-2", 1);
    makeOld(interruptedOld);
    const fs::path stoppedBeforeALayer = makeRun("k3-1", 0);
    const fs::path runningElsewhere = makeRun("k4-1", 1);
    makeOld(runningElsewhere);
    const auto other = holdElsewhere(runningElsewhere);
    ASSERT_TRUE(other);
    const fs::path notARun = root / "k5-1";  // no plan.json: the user's own, whatever its name or age
    fs::create_directories(notARun / "layer-0000");
    std::ofstream(notARun / "notes.txt") << "mine\n";
    makeOld(notARun);
    std::ofstream(root / "k6-1.lock") << "";      // a dead process's lock of a folder that went
    std::ofstream(root / "k6-2.finished") << "";  // a marker whose folder went

    std::uintmax_t removable = 0;
    for (const fs::path& folder : {finishedFree, interruptedOld, stoppedBeforeALayer})
        for (const auto& entry : fs::recursive_directory_iterator(folder))
            if (entry.is_regular_file()) removable += entry.file_size();
    const RunCache::Cleaned cleaned = cache.cleanUp();
    EXPECT_EQ(cleaned.folders, 3);
    EXPECT_EQ(cleaned.bytes, removable);
    EXPECT_FALSE(fs::exists(finishedFree));
    EXPECT_FALSE(fs::exists(RunLease::finishedMarkerOf(finishedFree)));
    EXPECT_FALSE(fs::exists(interruptedOld));
    EXPECT_FALSE(fs::exists(stoppedBeforeALayer));
    EXPECT_TRUE(fs::exists(finishedShown / "plan.json")) << "a result on screen lost its codes";
    EXPECT_TRUE(fs::exists(interruptedRecent / "layer-0000"))
        << "an interrupted run of this week was not kept for resume";
    EXPECT_EQ(pipeline::WorkFolder::interruptedLayers(runningElsewhere), 1) << "another process's folder was touched";
    EXPECT_TRUE(fs::exists(notARun / "notes.txt"));
    EXPECT_FALSE(fs::exists(root / "k6-1.lock"));
    EXPECT_FALSE(fs::exists(root / "k6-2.finished"));
    EXPECT_FALSE(fs::exists(FolderLock::fileOf(interruptedRecent))) << "the clean-up left its own lock file";

    kill(*other);  // that process died: its folder is an old interrupted run now
    EXPECT_EQ(cache.cleanUp().folders, 1);
    EXPECT_FALSE(fs::exists(runningElsewhere));
    shown.reset();  // the result was closed without removing its folder (the process was killed)
    EXPECT_EQ(cache.cleanUp().folders, 1);
    EXPECT_FALSE(fs::exists(finishedShown));
    EXPECT_EQ(cache.cleanUp().folders, 0);
    EXPECT_TRUE(fs::exists(interruptedRecent / "layer-0000"));
}

TEST_F(RunCacheTest, TakeInterruptedOffersTheFurthestRunOfItsKeyThatNobodyHolds) {
    makeRun("key-1", 1);
    const fs::path furthest = makeRun("key-2", 2);
    markFinished(makeRun("key-3", 2));  // a finished run's folder serves a result: never resumed
    makeRun("key-4", 0);
    makeRun("other-1", 3);
    makeRun("key-x", 3);  // not a run folder's name of "key"

    std::shared_ptr<RunLease> held = hold(furthest);
    std::optional<RunCache::Interrupted> offered = cache.takeInterrupted("key");
    ASSERT_TRUE(offered);
    EXPECT_EQ(offered->lease->folder(), root / "key-1");
    EXPECT_EQ(offered->finishedLayers, 1);
    EXPECT_FALSE(cache.takeInterrupted("key")) << "the one offered is held now";
    held.reset();
    offered = cache.takeInterrupted("key");
    ASSERT_TRUE(offered);
    EXPECT_EQ(offered->lease->folder(), furthest);
    EXPECT_EQ(offered->finishedLayers, 2);
    EXPECT_FALSE(cache.takeInterrupted("nothing"));

    offered->lease->removeFolder();  // declined
    EXPECT_FALSE(fs::exists(furthest));
}

TEST_F(RunCacheTest, StartNewNeverHandsOutAFolderInUseOrKept) {
    makeRun("key-1", 1);                                        // kept for resume
    std::shared_ptr<RunLease> starting = hold(root / "key-2");  // a run about to create its folder
    ASSERT_TRUE(starting);
    std::shared_ptr<RunLease> first = cache.startNew("key");
    EXPECT_EQ(first->folder(), root / "key-3");
    EXPECT_FALSE(fs::exists(first->folder())) << "the job creates it";
    EXPECT_EQ(cache.startNew("key")->folder(), root / "key-4");  // and lets it go at once
    EXPECT_EQ(cache.startNew("key")->folder(), root / "key-4");
    first.reset();
    starting.reset();
    EXPECT_EQ(cache.startNew("key")->folder(), root / "key-2");
}

}  // namespace
}  // namespace qs::gui::test
