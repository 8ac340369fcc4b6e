#include "text/number_format.h"

#include <array>
#include <cmath>

#include <QStringList>

namespace qs::gui {

QString humanBytes(std::uint64_t bytes) {
    static constexpr std::array<const char*, 6> kUnits{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < kUnits.size()) {
        value /= 1024.0;
        ++unit;
    }
    return unit == 0 ? QStringLiteral("%1 B").arg(bytes)
                     : QStringLiteral("%1 %2").arg(value, 0, 'f', value < 10 ? 2 : 1).arg(QLatin1String(kUnits[unit]));
}

QString humanCount(std::int64_t count) {
    static constexpr std::array<std::pair<double, const char*>, 4> kScales{
        {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}}};
    const double value = static_cast<double>(count);
    for (const auto& [scale, suffix] : kScales) {
        if (std::abs(value) >= scale) {
            const double scaled = value / scale;
            return QStringLiteral("%1 %2")
                .arg(scaled, 0, 'f', std::abs(scaled) < 10 ? 2 : 1)
                .arg(QLatin1String(suffix));
        }
    }
    return QString::number(count);
}

QString shapeText(const std::vector<std::int64_t>& shape) {
    QStringList parts;
    for (const std::int64_t d : shape) parts << QString::number(d);
    return QLatin1Char('[') + parts.join(QStringLiteral(", ")) + QLatin1Char(']');
}

QString valueText(double value) { return QString::number(value, 'g', 6); }

QString durationText(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return QStringLiteral("-");
    if (seconds < 10) return QStringLiteral("%1 s").arg(seconds, 0, 'f', 1);
    const auto whole = static_cast<std::int64_t>(std::llround(seconds));
    if (whole < 60) return QStringLiteral("%1 s").arg(whole);
    if (whole < 3600) return QStringLiteral("%1 min %2 s").arg(whole / 60).arg(whole % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1 h %2 min").arg(whole / 3600).arg((whole % 3600) / 60, 2, 10, QLatin1Char('0'));
}

}  // namespace qs::gui
