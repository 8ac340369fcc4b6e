#include "jobs/run_lease.h"

#include <fstream>

#include "qs/pipeline/work_folder.h"

namespace qs::gui {
namespace fs = std::filesystem;

RunLease::~RunLease() {
    if (!finished_) return;  // kept for resume; the lock goes with lock_
    removeFolder();
    std::error_code ec;
    fs::remove(finishedMarkerOf(folder_), ec);
}

fs::path RunLease::finishedMarkerOf(const fs::path& folder) { return fs::path(folder.string() + ".finished"); }

void RunLease::markFinished() noexcept {
    finished_ = true;
    // Without the marker (a full disk), a later session sees an interrupted run with every layer done:
    // resuming it gives the result back, and declining removes it; either way nothing is lost.
    std::ofstream(finishedMarkerOf(folder_))
        << "this run finished; its folder serves a result while QuantScope shows it\n";
}

void RunLease::removeFolder() noexcept {
    try {
        pipeline::WorkFolder::discard(folder_);  // only a folder that holds a run (plan.json)
    } catch (const std::exception&) {
        // Removed under us, or not removable: the next start-up's clean-up tries again.
    }
}

namespace {

// What a leased method's StoredLayers points into: the Job's own, and the lease it keeps alive.
struct LeasedLayers {
    std::shared_ptr<const pipeline::StoredLayers> stored;
    std::shared_ptr<RunLease> lease;
};

}  // namespace

std::shared_ptr<const pipeline::JobResult> leasedResult(pipeline::JobResult result, std::shared_ptr<RunLease> lease) {
    for (pipeline::MethodResult& m : result.methods) {
        if (!m.stored) continue;
        auto leased = std::make_shared<const LeasedLayers>(LeasedLayers{std::move(m.stored), lease});
        m.stored =
            std::shared_ptr<const pipeline::StoredLayers>(leased, leased->stored.get());  // aliasing: owns `leased`
    }
    return std::make_shared<const pipeline::JobResult>(std::move(result));
}

}  // namespace qs::gui
