#pragma once
// Where a GUI run keeps its state after each finished layer (pipeline::WorkFolder) and then, once it
// finished, its result's codes (JobPlan::resultsOnDisk): a folder of the run cache (RunCache) in the
// user's cache folder, held by this process (RunLease) for as long as the run or its result lives.
#include <memory>
#include <string>

#include "qs/io/checkpoint_fingerprint.h"

#include "jobs/quantize_settings.h"
#include "jobs/run_lease.h"

namespace qs::gui {

struct RunFolder {
    std::shared_ptr<RunLease> lease;  // none: the job keeps nothing on disk, and its result is in RAM
    bool resume = false;              // continue the interrupted run found there
};

// What names the runs of `settings` on the checkpoint in the run cache: a digest of everything that
// changes the result.
std::string runKey(const QuantizeSettings& settings, const io::CheckpointFingerprint& checkpoint);

}  // namespace qs::gui
