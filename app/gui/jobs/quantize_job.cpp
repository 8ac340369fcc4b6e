#include "jobs/quantize_job.h"

#include <utility>

#include <QThread>

#include "qs/error.h"
#include "qs/thread_team.h"

#include "jobs/run_plan.h"

namespace qs::gui {

QuantizeJob::QuantizeJob(QObject* parent) : QObject(parent) {}

QuantizeJob::~QuantizeJob() {
    if (!thread_) return;
    token_.cancel();
    thread_->wait();  // the worker posts to this object; it must be gone first
}

bool QuantizeJob::start(QuantizeSettings settings, std::filesystem::path checkpoint, RunFolder folder) {
    if (thread_) return false;
    token_ = qs::CancelToken();
    clock_.start();
    thread_ = QThread::create([this, settings = std::move(settings), checkpoint = std::move(checkpoint),
                               folder = std::move(folder), token = token_, generation = ++generation_]() mutable {
        qs::sizeThreadTeamToFreeCores();  // this thread's OpenMP team, as the cores are now
        run(settings, checkpoint, std::move(folder), token, generation);  // the lease ends with run()
    });
    connect(thread_, &QThread::finished, this, &QuantizeJob::onThreadEnded);
    thread_->start();
    emit runningChanged(true);
    return true;
}

void QuantizeJob::cancel() {
    token_.cancel();
    if (thread_) ++generation_;
}

// On the worker thread: everything it learns goes to this object's thread as a queued call, which
// is dropped there when cancel() came first; the end is then reported as cancelled().
void QuantizeJob::run(const QuantizeSettings& settings, const std::filesystem::path& checkpoint, RunFolder folder,
                      const qs::CancelToken& token, quint64 generation) {
    // `last`: the job's end, which becomes cancelled() when the generation has moved on.
    auto post = [this, generation](auto call, bool last = false) {
        QMetaObject::invokeMethod(
            this,
            [this, generation, last, call = std::move(call)] {
                if (generation == generation_)
                    call();
                else if (last)
                    emit cancelled();
            },
            Qt::QueuedConnection);
    };
    try {
        pipeline::Job job(buildRunPlan(settings, checkpoint, folder));
        token.throwIfCancelled();
        pipeline::JobResult done =
            job.run([&](const qs::Progress& p) { post([this, p] { emit progressed(p); }); }, token,
                    [&](const pipeline::ModuleLog& row) { post([this, row] { emit moduleLogged(row); }); });
        std::shared_ptr<const pipeline::JobResult> result;
        if (folder.lease) {
            folder.lease->markFinished();  // from here the folder lives as long as the result
            result = leasedResult(std::move(done), std::exchange(folder.lease, nullptr));
        } else {
            result = std::make_shared<const pipeline::JobResult>(std::move(done));
        }
        post([this, result] { emit finished(result); }, true);
    } catch (const Cancelled&) {
        post([this] { emit cancelled(); }, true);
    } catch (const std::exception& e) {
        post([this, message = QString::fromStdString(e.what())] { emit failed(message); }, true);
    }
}

void QuantizeJob::onThreadEnded() {
    thread_->deleteLater();
    thread_ = nullptr;
    emit runningChanged(false);
}

}  // namespace qs::gui
