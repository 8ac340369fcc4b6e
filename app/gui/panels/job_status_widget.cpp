#include "panels/job_status_widget.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QToolButton>

#include "jobs/job_progress_text.h"

namespace qs::gui {

JobStatusWidget::JobStatusWidget(QWidget* parent)
    : QWidget(parent), label_(new QLabel(this)), bar_(new QProgressBar(this)), cancel_(new QToolButton(this)) {
    bar_->setRange(0, 1000);
    bar_->setTextVisible(false);
    bar_->setMaximumWidth(160);
    cancel_->setText(tr("Cancel"));
    connect(cancel_, &QToolButton::clicked, this, &JobStatusWidget::cancelRequested);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(label_);
    layout->addWidget(bar_);
    layout->addWidget(cancel_);
    setRunning(false);
}

void JobStatusWidget::setRunning(bool running, double estimatedSeconds) {
    if (running) {
        remaining_ = RemainingTime(estimatedSeconds);
        bar_->setValue(0);
        label_->setText(tr("Starting the job…"));
    }
    setVisible(running);
}

void JobStatusWidget::showProgress(const qs::Progress& progress, double elapsedSeconds) {
    bar_->setValue(static_cast<int>(1000.0 * progress.fraction));
    label_->setText(progressText(progress, remaining_.update(progress.fraction, elapsedSeconds)));
}

QString JobStatusWidget::text() const { return label_->text(); }

}  // namespace qs::gui
