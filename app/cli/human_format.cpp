#include "human_format.h"

#include <array>
#include <cmath>
#include <cstdio>

namespace qs::cli {
namespace {

std::string printf1(const char* format, double value, const char* suffix) {
    std::array<char, 64> buffer{};
    std::snprintf(buffer.data(), buffer.size(), format, value, suffix);
    return buffer.data();
}

}  // namespace

std::string formatCount(std::int64_t count) {
    struct Unit {
        double scale;
        const char* suffix;
        const char* format;
    };
    // Thousands keep one decimal (292.5K), larger units two (7.62B), as model cards write them.
    static constexpr std::array<Unit, 4> units{
        {{1e12, "T", "%.2f%s"}, {1e9, "B", "%.2f%s"}, {1e6, "M", "%.2f%s"}, {1e3, "K", "%.1f%s"}}};
    const double value = static_cast<double>(count);
    for (const Unit& unit : units) {
        if (std::fabs(value) >= unit.scale) return printf1(unit.format, value / unit.scale, unit.suffix);
    }
    return std::to_string(count);
}

std::string formatBytes(std::uint64_t bytes) {
    static constexpr std::array<const char*, 5> units{"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) return std::to_string(bytes) + " B";
    double value = static_cast<double>(bytes) / 1024.0;
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < units.size()) {
        value /= 1024.0;
        ++unit;
    }
    return printf1("%.2f %s", value, units[unit]);
}

std::string formatGrouped(std::int64_t value) {
    const bool negative = value < 0;
    std::string digits = std::to_string(value);
    if (negative) digits.erase(0, 1);
    std::string grouped;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
        grouped += digits[i];
    }
    return negative ? "-" + grouped : grouped;
}

std::string formatShape(const std::vector<std::int64_t>& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) text += ", ";
        text += std::to_string(shape[i]);
    }
    return text + "]";
}

std::string formatNumber(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    return printf1("%.6g%s", value, "");
}

}  // namespace qs::cli
