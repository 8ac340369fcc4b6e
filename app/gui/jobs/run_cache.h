#pragma once
// RunCache: the folder that holds the GUI's run folders (<user cache>/runs). A run's folder is
// "<key>-<n>" (runKey: the checkpoint and settings; n tells apart runs of the same settings, such as a
// result still shown while the same settings run again); beside it "<key>-<n>.lock" while a process
// holds it (FolderLock) and "<key>-<n>.finished" once its run finished (RunLease::markFinished).
//
// The rule that keeps the cache from growing (cleanUp, at each start of the window):
//  - a folder that a live process holds (a run in progress, a result on screen) is never touched;
//  - a finished run's folder that nobody holds goes: the result that read from it was closed, or the
//    process that showed it died;
//  - an interrupted run stays for the offer to resume it (Start with the same settings) for
//    kKeepInterrupted after its last finished layer, then goes; one that finished no layer goes at once
//    (there is nothing to resume), and one the user declined to resume went then;
//  - only run folders (with plan.json: WorkFolder::discard) and their .lock and .finished files are
//    ever removed; anything else under the folder is left alone.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "jobs/run_lease.h"

namespace qs::gui {

class RunCache {
public:
    static constexpr std::chrono::hours kKeepInterrupted{24 * 7};

    explicit RunCache(std::filesystem::path root) : root_(std::move(root)) {}
    static RunCache inUserCache();  // QStandardPaths' CacheLocation / "runs"
    const std::filesystem::path& root() const { return root_; }

    struct Interrupted {
        std::shared_ptr<RunLease> lease;
        int finishedLayers = 0;
    };
    // The interrupted run of `key` with the most finished layers that no process holds, held now by
    // this one; nothing when there is none.
    std::optional<Interrupted> takeInterrupted(const std::string& key) const;
    // A folder for a new run of `key`, held by this process; the job creates it. Throws qs::Error when
    // the cache cannot be written.
    std::shared_ptr<RunLease> startNew(const std::string& key) const;

    struct Cleaned {
        int folders = 0;
        std::uintmax_t bytes = 0;
    };
    // Applies the rule above; never throws (what cannot be removed now is tried again next time).
    Cleaned cleanUp(std::chrono::hours keepInterrupted = kKeepInterrupted) const;

private:
    std::filesystem::path root_;
};

}  // namespace qs::gui
