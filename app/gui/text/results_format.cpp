#include "text/results_format.h"

#include <cmath>

namespace qs::gui {

QString methodLabel(const pipeline::MethodResult& m) { return QString::fromStdString(m.label()); }

QString shortLabel(const pipeline::MethodResult& m) {
    return QString::fromStdString(m.evaluatedCheckpoint.empty() ? m.method.name : m.evaluatedCheckpoint);
}

QString bitsLabel(const pipeline::MethodResult& m) { return bitsText(m) + QStringLiteral(" bpw"); }

QString bitsText(const pipeline::MethodResult& m) {
    return std::isfinite(m.bitsPerWeight) ? QString::number(m.bitsPerWeight, 'f', 2) : QStringLiteral("–");
}

QString evaluatedCheckpointLabel(const formats::FormatInfo& format) {
    const QString name = QString::fromUtf8(formats::formatName(format.format));
    if (format.format == formats::Format::Gguf && !format.variant.empty())
        return name + QLatin1Char(' ') + QString::fromStdString(format.variant);
    if (const auto scheme = format.uniformScheme()) return QStringLiteral("%1 %2-bit").arg(name).arg(scheme->bits);
    return name + QStringLiteral(" mixed");
}

bool hasKl(const pipeline::MethodResult& m) { return m.error.empty() && m.kl.count > 0; }

QString klText(double value) {
    if (!std::isfinite(value)) return QStringLiteral("–");
    return QString::number(value, 'g', 4);
}

}  // namespace qs::gui
