#include "jobs/job_progress_text.h"

#include <QCoreApplication>
#include <QRegularExpression>
#include <QStringList>

#include "text/number_format.h"

namespace qs::gui {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("JobProgress", text); }

}  // namespace

QString progressText(const qs::Progress& progress, double secondsLeft) {
    QStringList parts{QString::fromStdString(progress.stage)};
    QString message = QString::fromStdString(progress.message);
    if (progress.steps > 0) {
        const QString step = QStringLiteral("%1/%2").arg(progress.step).arg(progress.steps);
        parts << (progress.stage == "evaluate" ? tr("sequence %1") : tr("layer %1")).arg(step);
        // The core's messages repeat "layer i/N" at their end; say it once.
        message.remove(QRegularExpression(QStringLiteral(",?\\s*layer %1$").arg(QRegularExpression::escape(step))));
    }
    if (!message.isEmpty()) parts << message;
    parts << QStringLiteral("%1 %").arg(static_cast<int>(100.0 * progress.fraction));
    parts << (secondsLeft >= 0 ? tr("ETA %1").arg(durationText(secondsLeft)) : tr("ETA …"));
    return parts.join(QStringLiteral(" · "));
}

}  // namespace qs::gui
