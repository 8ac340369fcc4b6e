#include "job_progress_text.h"

#include <QCoreApplication>
#include <QRegularExpression>
#include <QStringList>

#include "number_format.h"

namespace qs::gui {
namespace {

constexpr double kLeastFractionForEta = 0.02;   // the first percent is opening and embedding: no rate yet

QString tr(const char* text) { return QCoreApplication::translate("JobProgress", text); }

}  // namespace

double remainingSeconds(double fraction, double elapsedSeconds) {
    if (fraction < kLeastFractionForEta || fraction > 1.0 || elapsedSeconds <= 0) return -1.0;
    return elapsedSeconds * (1.0 - fraction) / fraction;
}

QString progressText(const qs::Progress& progress, double elapsedSeconds) {
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
    const double left = remainingSeconds(progress.fraction, elapsedSeconds);
    parts << (left >= 0 ? tr("ETA %1").arg(durationText(left)) : tr("ETA …"));
    return parts.join(QStringLiteral(" · "));
}

}  // namespace qs::gui
