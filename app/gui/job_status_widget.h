#pragma once
// The status bar's part for a running quantization job: what it is doing, a progress bar with the
// time left, and Cancel.
#include <QWidget>

#include "qs/progress.h"

class QLabel;
class QProgressBar;
class QToolButton;

namespace qs::gui {

class JobStatusWidget : public QWidget {
    Q_OBJECT

public:
    explicit JobStatusWidget(QWidget* parent = nullptr);

    void setRunning(bool running);
    void showProgress(const qs::Progress& progress, double elapsedSeconds);
    QString text() const;

signals:
    void cancelRequested();

private:
    QLabel* label_;
    QProgressBar* bar_;
    QToolButton* cancel_;
};

}  // namespace qs::gui
