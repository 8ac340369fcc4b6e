#pragma once
// How numbers read in the GUI: byte sizes, parameter counts, shapes and statistic values.
#include <cstdint>
#include <vector>

#include <QString>

namespace qs::gui {

QString humanBytes(std::uint64_t bytes);                    // "1.5 MiB"
QString humanCount(std::int64_t count);                     // "260.1 K", "7.24 B"
QString shapeText(const std::vector<std::int64_t>& shape);  // "[64, 172]", "[]" for a scalar
QString valueText(double value);                            // six significant digits
QString durationText(double seconds);                       // "0.4 s", "42 s", "3 min 05 s", "2 h 10 min"

}  // namespace qs::gui
