#pragma once
// QuantizeJob: one pipeline::Job at a time on its own worker QThread. The worker builds the plan
// (tokenizing) and runs the job; progress, module-log rows and the result come back to this
// object's thread as queued calls, so the GUI never waits. cancel() asks the job to stop at its
// next check; runningChanged(false) says when the worker has really ended, whichever way it ended.
//
// A job can pass its last check before cancel() and finish anyway; its result would then reach a
// window that has moved on (another checkpoint open). So every start() and cancel() begins a new
// generation, and what a worker posts is delivered only while its generation is current (as
// JobRunner does): after cancel(), the job ends with cancelled(), never finished() or failed().
#include <memory>

#include "qs/cancel_token.h"
#include "qs/pipeline/job_result.h"

#include "jobs/quantize_settings.h"
#include "jobs/run_folder.h"
#include "jobs/worker_job.h"

namespace qs::gui {

using JobResultPtr = std::shared_ptr<const pipeline::JobResult>;

class QuantizeJob : public WorkerJob {
    Q_OBJECT

public:
    explicit QuantizeJob(QObject* parent = nullptr) : WorkerJob(parent) {}

    // False (and nothing starts) while a job is still running. With a `folder`, the job keeps its
    // state there after each layer (and resumes the run found there when asked), and its result's
    // codes stay there (results on disk): the result holds the folder's lease, so the folder goes
    // with the last holder of the result. A cancelled or failed job's folder is kept, to resume.
    // Without one, nothing is kept on disk and the result is in RAM.
    bool start(QuantizeSettings settings, std::filesystem::path checkpoint, RunFolder folder = {});

signals:
    void moduleLogged(const qs::pipeline::ModuleLog& row);
    void finished(const qs::gui::JobResultPtr& result);

private:
    void run(const QuantizeSettings& settings, const std::filesystem::path& checkpoint, RunFolder folder,
             const qs::CancelToken& token, quint64 generation);
};

}  // namespace qs::gui
