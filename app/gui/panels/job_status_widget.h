#pragma once
// The status bar's part for a running quantization job: what it is doing, a progress bar with the
// time left, and Cancel.
#include <QWidget>

#include "qs/progress.h"

#include "jobs/remaining_time.h"

class QLabel;
class QProgressBar;
class QToolButton;

namespace qs::gui {

class JobStatusWidget : public QWidget {
    Q_OBJECT

public:
    explicit JobStatusWidget(QWidget* parent = nullptr);

    // `estimatedSeconds`: the plan's predicted time (0: none), blended into the ETA until work is done.
    void setRunning(bool running, double estimatedSeconds = 0.0);
    void showProgress(const qs::Progress& progress, double elapsedSeconds);
    QString text() const;

signals:
    void cancelRequested();

private:
    QLabel* label_;
    QProgressBar* bar_;
    QToolButton* cancel_;
    RemainingTime remaining_;
};

}  // namespace qs::gui
