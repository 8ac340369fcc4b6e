#include "jobs/worker_job.h"

#include <exception>

#include <QThread>

#include "qs/error.h"
#include "qs/thread_team.h"

namespace qs::gui {

WorkerJob::~WorkerJob() {
    if (!thread_) return;
    token_.cancel();
    thread_->wait();  // the worker posts to this object; it must be gone first
}

bool WorkerJob::launch(std::function<void(const qs::CancelToken& token, quint64 generation)> work) {
    if (thread_) return false;
    token_ = qs::CancelToken();
    clock_.start();
    thread_ = QThread::create([work = std::move(work), token = token_, generation = ++generation_] {
        qs::sizeThreadTeamToFreeCores();  // this thread's OpenMP team, as the cores are now
        work(token, generation);
    });
    connect(thread_, &QThread::finished, this, &WorkerJob::onThreadEnded);
    thread_->start();
    emit runningChanged(true);
    return true;
}

void WorkerJob::cancel() {
    token_.cancel();
    if (thread_) ++generation_;
}

void WorkerJob::guarded(quint64 generation, const std::function<void()>& body) {
    try {
        body();
    } catch (const Cancelled&) {
        post(
            generation, [this] { emit cancelled(); }, true);
    } catch (const std::exception& e) {
        post(
            generation, [this, message = QString::fromStdString(e.what())] { emit failed(message); }, true);
    }
}

qs::ProgressCallback WorkerJob::progressPoster(quint64 generation) {
    return [this, generation](const qs::Progress& p) { post(generation, [this, p] { emit progressed(p); }); };
}

void WorkerJob::onThreadEnded() {
    thread_->deleteLater();
    thread_ = nullptr;
    emit runningChanged(false);
}

}  // namespace qs::gui
