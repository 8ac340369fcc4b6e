#include "jobs/job_runner.h"

#include "qs/error.h"
#include "qs/thread_team.h"

namespace qs::gui {

JobRunner::JobRunner(QObject* parent) : QObject(parent) {
    // Two threads: a new job starts at once while a cancelled one winds down to its next check.
    pool_.setMaxThreadCount(2);
}

JobRunner::~JobRunner() {
    token_.cancel();
    ++latest_;
    // Workers post results to this object; none may still run when it is gone. Posted but
    // undelivered results are discarded by ~QObject.
    pool_.waitForDone();
}

void JobRunner::cancel() {
    token_.cancel();
    ++latest_;
    setBusy(false);
}

void JobRunner::launch(Task task, std::function<void(QString)> failed) {
    token_.cancel();
    token_ = qs::CancelToken();
    const quint64 id = ++latest_;
    setBusy(true);
    pool_.start([this, id, token = token_, task = std::move(task), failed = std::move(failed)] {
        qs::sizeThreadTeamToFreeCores();  // this pool thread's OpenMP team, as the cores are now
        Delivery delivery;
        try {
            delivery = task(token);
        } catch (const Cancelled&) {
            delivery = nullptr;
        } catch (const std::exception& e) {
            delivery = [failed, message = QString::fromStdString(e.what())] { failed(message); };
        }
        QMetaObject::invokeMethod(
            this, [this, id, delivery] { deliver(id, delivery); }, Qt::QueuedConnection);
    });
}

void JobRunner::deliver(quint64 id, const Delivery& delivery) {
    if (id != latest_) return;  // a newer job (or cancel()) superseded this one
    if (delivery) delivery();
    // After drawing, so that whoever waits for "not busy" (the screenshot) sees the result; unless
    // the delivery itself started a newer job.
    if (id == latest_) setBusy(false);
}

void JobRunner::setBusy(bool busy) {
    if (busy_ == busy) return;
    busy_ = busy;
    emit busyChanged(busy);
}

}  // namespace qs::gui
