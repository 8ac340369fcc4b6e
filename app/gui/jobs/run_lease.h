#pragma once
// RunLease: a run folder of the run cache (RunCache) that this process holds, from the job's start
// to the end of the last result that reads from it. While it lives, no QuantScope process resumes,
// reuses or cleans the folder (FolderLock). When the last shared_ptr to it goes, a finished run's
// folder is removed (nothing can read its codes any more); an interrupted run's stays, to resume.
#include <filesystem>
#include <memory>

#include "qs/pipeline/job_result.h"

#include "jobs/folder_lock.h"

namespace qs::gui {

class RunLease {
public:
    RunLease(std::filesystem::path folder, FolderLock lock) : folder_(std::move(folder)), lock_(std::move(lock)) {}
    RunLease(const RunLease&) = delete;
    RunLease& operator=(const RunLease&) = delete;
    ~RunLease();

    const std::filesystem::path& folder() const { return folder_; }
    // The run finished: its folder now serves a result and is never offered for resume. A marker
    // beside it says so to later sessions (RunCache::cleanUp removes such a folder once nobody holds it).
    void markFinished() noexcept;
    // Removes the folder now (the user declined to resume the run in it).
    void removeFolder() noexcept;

    static std::filesystem::path finishedMarkerOf(const std::filesystem::path& folder);

private:
    std::filesystem::path folder_;
    FolderLock lock_;
    bool finished_ = false;
};

// `result`, whose stored layers read from `lease`'s folder, as the GUI shares it: each method's
// StoredLayers holds the lease, so the folder lives exactly as long as something can read from it
// (the Results and Export panels, an export in progress, a copy of a method) and goes with the last.
std::shared_ptr<const pipeline::JobResult> leasedResult(pipeline::JobResult result, std::shared_ptr<RunLease> lease);

}  // namespace qs::gui
