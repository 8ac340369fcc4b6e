#include "jobs/run_folder.h"

#include <QCryptographicHash>
#include <QString>

namespace qs::gui {

std::string runKey(const QuantizeSettings& s, const io::CheckpointFingerprint& checkpoint) {
    // Everything that changes the result; the work folder itself refuses a run whose plan differs
    // in what this misses (the text files' contents: their tokens are hashed there).
    QString key = QString::fromStdString(checkpoint.describe());
    for (const MethodChoice& m : s.methods)
        key += QStringLiteral("|%1/%2").arg(QString::fromStdString(m.name)).arg(m.groupSize);
    key += QStringLiteral("|%1|%2|%3|%4|%5|%6|%7|%8|%9")
               .arg(s.calibrationFile)
               .arg(s.samples)
               .arg(s.sequenceLength)
               .arg(s.evaluationFile)
               .arg(s.evaluationSamples)
               .arg(int(s.device))
               .arg(int(s.perLayerKl))
               .arg(int(s.kvCacheFp8))
               .arg(s.seed);
    return QCryptographicHash::hash(key.toUtf8(), QCryptographicHash::Sha256).toHex().left(20).toStdString();
}

}  // namespace qs::gui
