#pragma once
// The plan of a job as the GUI runs it: buildPlan's, with its state after each layer and its result's
// codes in a run folder (JobPlan::workDir, resultsOnDisk), so that memory does not grow with the
// model's depth; and the estimate of that plan, which the Quantize panel shows.
#include <filesystem>

#include "qs/cancel_token.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/resource_estimate.h"

#include "jobs/quantize_settings.h"
#include "jobs/run_folder.h"

namespace qs::gui {

// In `folder` (resuming the run there when it says so); without a lease, in RAM and nothing on disk.
pipeline::JobPlan buildRunPlan(const QuantizeSettings& settings, const std::filesystem::path& checkpoint,
                               const RunFolder& folder);

// The peak memory and time of a run of `settings` in a run folder (results on disk). Opens the
// checkpoint and tokenizes the texts (a worker's job); checks `token` before the estimate proper.
pipeline::ResourceEstimate estimateRun(const QuantizeSettings& settings, const std::filesystem::path& checkpoint,
                                       const qs::CancelToken& token = {});

}  // namespace qs::gui
