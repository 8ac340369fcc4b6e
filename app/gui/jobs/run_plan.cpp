#include "jobs/run_plan.h"

#include "jobs/run_cache.h"

namespace qs::gui {

pipeline::JobPlan buildRunPlan(const QuantizeSettings& settings, const std::filesystem::path& checkpoint,
                               const RunFolder& folder) {
    pipeline::JobPlan plan = buildPlan(settings, checkpoint);
    if (!folder.lease) return plan;
    plan.workDir = folder.lease->folder();
    plan.resume = folder.resume;
    plan.resultsOnDisk = true;
    return plan;
}

pipeline::ResourceEstimate estimateRun(const QuantizeSettings& settings, const std::filesystem::path& checkpoint,
                                       const qs::CancelToken& token) {
    pipeline::JobPlan plan = buildPlan(settings, checkpoint);
    // Job::estimate reads the checkpoint's headers only: the folder is named (as Start will give one),
    // never created.
    plan.workDir = RunCache::inUserCache().root();
    plan.resultsOnDisk = true;
    pipeline::Job job(std::move(plan));
    token.throwIfCancelled();
    return job.estimate();
}

}  // namespace qs::gui
