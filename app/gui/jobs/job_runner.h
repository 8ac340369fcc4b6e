#pragma once
// JobRunner: one background computation at a time for one view (hotspot's job tracker). Every
// start() gets a new id and cancels the job before it, so selecting another tensor abandons the
// previous histogram; a result reaches the GUI thread through a queued call, and only when its job
// is still the latest. The GUI never waits on a job, except the destructor, which cancels first.
#include <exception>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include <QObject>
#include <QString>
#include <QThreadPool>

#include "qs/cancel_token.h"

namespace qs::gui {

class JobRunner : public QObject {
    Q_OBJECT

public:
    explicit JobRunner(QObject* parent = nullptr);
    ~JobRunner() override;

    // `work(token)` runs on a worker thread; `done(result)` runs on this object's thread. A
    // qs::Error (or any std::exception) thrown by work goes to `failed` with its message;
    // qs::Cancelled goes nowhere.
    template <class Work, class Done>
    void start(Work work, Done done, std::function<void(QString)> failed) {
        using Result = std::invoke_result_t<Work, const qs::CancelToken&>;
        launch(
            [work = std::move(work), done = std::move(done)](const qs::CancelToken& token) -> Delivery {
                auto result = std::make_shared<Result>(work(token));
                return [done, result] { done(std::move(*result)); };
            },
            std::move(failed));
    }

    void cancel();  // drops the running job's result; busy() turns false at once
    bool isBusy() const { return busy_; }

signals:
    void busyChanged(bool busy);

private:
    using Delivery = std::function<void()>;
    using Task = std::function<Delivery(const qs::CancelToken&)>;

    void launch(Task task, std::function<void(QString)> failed);
    void deliver(quint64 id, const Delivery& delivery);
    void setBusy(bool busy);

    QThreadPool pool_;
    qs::CancelToken token_;
    quint64 latest_ = 0;
    bool busy_ = false;
};

}  // namespace qs::gui
