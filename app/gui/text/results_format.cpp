#include "text/results_format.h"

#include <cmath>

namespace qs::gui {

QString methodLabel(const pipeline::MethodResult& m) { return QString::fromStdString(m.label()); }

QString shortLabel(const pipeline::MethodResult& m) { return QString::fromStdString(m.method.name); }

QString bitsLabel(const pipeline::MethodResult& m) { return QStringLiteral("%1 bpw").arg(m.bitsPerWeight, 0, 'f', 2); }

bool hasKl(const pipeline::MethodResult& m) { return m.error.empty() && m.kl.count > 0; }

QString klText(double value) {
    if (!std::isfinite(value)) return QStringLiteral("–");
    return QString::number(value, 'g', 4);
}

}  // namespace qs::gui
