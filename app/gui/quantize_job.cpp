#include "quantize_job.h"

#include <QThread>

#include "qs/error.h"
#include "qs/pipeline/work_folder.h"
#include "qs/thread_team.h"

namespace qs::gui {

QuantizeJob::QuantizeJob(QObject* parent) : QObject(parent) {}

QuantizeJob::~QuantizeJob() {
    if (!thread_) return;
    token_.cancel();
    thread_->wait();   // the worker posts to this object; it must be gone first
}

bool QuantizeJob::start(QuantizeSettings settings, std::filesystem::path checkpoint, RunFolder folder) {
    if (thread_) return false;
    token_ = qs::CancelToken();
    clock_.start();
    thread_ = QThread::create([this, settings = std::move(settings), checkpoint = std::move(checkpoint),
                               folder = std::move(folder), token = token_, generation = ++generation_] {
        qs::sizeThreadTeamToFreeCores();   // this thread's OpenMP team, as the cores are now
        run(settings, checkpoint, folder, token, generation);
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
void QuantizeJob::run(const QuantizeSettings& settings, const std::filesystem::path& checkpoint, const RunFolder& folder,
                      const qs::CancelToken& token, quint64 generation) {
    // `last`: the job's end, which becomes cancelled() when the generation has moved on.
    auto post = [this, generation](auto call, bool last = false) {
        QMetaObject::invokeMethod(
            this,
            [this, generation, last, call = std::move(call)] {
                if (generation == generation_) call();
                else if (last) emit cancelled();
            },
            Qt::QueuedConnection);
    };
    try {
        pipeline::JobPlan plan = buildPlan(settings, checkpoint);
        plan.workDir = folder.path;
        plan.resume = folder.resume;
        pipeline::Job job(std::move(plan));
        token.throwIfCancelled();
        auto result = std::make_shared<const pipeline::JobResult>(job.run(
            [&](const qs::Progress& p) { post([this, p] { emit progressed(p); }); }, token,
            [&](const pipeline::ModuleLog& row) { post([this, row] { emit moduleLogged(row); }); }));
        pipeline::WorkFolder::discard(folder.path);   // the result is in memory now
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
