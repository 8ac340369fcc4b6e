#include "jobs/quantize_job.h"

#include <utility>

#include "jobs/run_plan.h"

namespace qs::gui {

bool QuantizeJob::start(QuantizeSettings settings, std::filesystem::path checkpoint, RunFolder folder) {
    // Moved into run(), so that the lease ends with run() (or goes with the result it holds).
    auto held = std::make_shared<RunFolder>(std::move(folder));
    return launch([this, settings = std::move(settings), checkpoint = std::move(checkpoint), held](
                      const qs::CancelToken& token, quint64 generation) {
        run(settings, checkpoint, std::move(*held), token, generation);
    });
}

// On the worker thread: everything it learns goes to this object's thread as a queued call, which
// is dropped there when cancel() came first; the end is then reported as cancelled().
void QuantizeJob::run(const QuantizeSettings& settings, const std::filesystem::path& checkpoint, RunFolder folder,
                      const qs::CancelToken& token, quint64 generation) {
    guarded(generation, [&] {
        pipeline::Job job(buildRunPlan(settings, checkpoint, folder));
        token.throwIfCancelled();
        pipeline::JobResult done = job.run(progressPoster(generation), token, [&](const pipeline::ModuleLog& row) {
            post(generation, [this, row] { emit moduleLogged(row); });
        });
        std::shared_ptr<const pipeline::JobResult> result;
        if (folder.lease) {
            folder.lease->markFinished();  // from here the folder lives as long as the result
            result = leasedResult(std::move(done), std::exchange(folder.lease, nullptr));
        } else {
            result = std::make_shared<const pipeline::JobResult>(std::move(done));
        }
        post(
            generation, [this, result] { emit finished(result); }, true);
    });
}

}  // namespace qs::gui
