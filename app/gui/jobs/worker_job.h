#pragma once
// WorkerJob: one long run on a worker QThread at a time (the Quantize panel's job, an evaluation). What
// the run learns comes back to this object's thread as queued calls (post); cancel() stops the run at its
// next check and drops whatever it posts afterwards, its end then reported as cancelled(). QuantizeJob
// and EvaluateJob add what they run and the signals of their results.
#include <functional>
#include <utility>

#include <QElapsedTimer>
#include <QMetaObject>
#include <QObject>
#include <QString>

#include "qs/cancel_token.h"
#include "qs/progress.h"

class QThread;

namespace qs::gui {

class WorkerJob : public QObject {
    Q_OBJECT

public:
    ~WorkerJob() override;  // cancels and waits for the worker

    void cancel();
    bool isRunning() const { return thread_ != nullptr; }
    double elapsedSeconds() const { return clock_.isValid() ? clock_.elapsed() / 1000.0 : 0.0; }

signals:
    void runningChanged(bool running);
    void progressed(const qs::Progress& progress);
    void failed(const QString& message);
    void cancelled();

protected:
    explicit WorkerJob(QObject* parent) : QObject(parent) {}

    // Runs `work` on a new worker thread (its OpenMP team sized to the cores free now) with the run's
    // token and generation; false (and nothing starts) while a run is still going.
    bool launch(std::function<void(const qs::CancelToken& token, quint64 generation)> work);

    // From the worker: `call` on this object's thread, unless cancel() came first; `last` marks the run's
    // end, which then becomes cancelled().
    template <typename Call>
    void post(quint64 generation, Call call, bool last = false) {
        QMetaObject::invokeMethod(
            this,
            [this, generation, last, call = std::move(call)] {
                if (generation == generation_)
                    call();
                else if (last)
                    emit cancelled();
            },
            Qt::QueuedConnection);
    }
    // From the worker: `body`, its Cancelled and errors posted as the run's end (cancelled(), failed()).
    void guarded(quint64 generation, const std::function<void()>& body);
    // A progress callback for the core that posts each report as progressed().
    qs::ProgressCallback progressPoster(quint64 generation);

private:
    void onThreadEnded();

    QThread* thread_ = nullptr;
    quint64 generation_ = 0;  // of the running job; cancel() moves on, so its posts are dropped
    qs::CancelToken token_;
    QElapsedTimer clock_;
};

}  // namespace qs::gui
