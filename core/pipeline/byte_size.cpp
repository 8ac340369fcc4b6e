#include "qs/pipeline/byte_size.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <utility>

#include "qs/error.h"

namespace qs::pipeline {
namespace {

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// The multiplier of a unit, 0 for an unknown one.
double unitBytes(std::string_view unit) {
    static const std::array<std::pair<const char*, double>, 14> units{{
        {"", 1.0},
        {"b", 1.0},
        {"k", 0x1p10},
        {"m", 0x1p20},
        {"g", 0x1p30},
        {"t", 0x1p40},
        {"kib", 0x1p10},
        {"mib", 0x1p20},
        {"gib", 0x1p30},
        {"tib", 0x1p40},
        {"kb", 1e3},
        {"mb", 1e6},
        {"gb", 1e9},
        {"tb", 1e12},
    }};
    const std::string u = lower(unit);
    for (const auto& [name, bytes] : units)
        if (u == name) return bytes;
    return 0.0;
}

}  // namespace

std::uint64_t parseByteSize(std::string_view text) {
    const std::string shown = "'" + std::string(text) + "'";
    const std::string_view trimmed = text.substr(0, text.find_last_not_of(' ') + 1);
    std::size_t digits = 0;
    while (digits < trimmed.size() &&
           (std::isdigit(static_cast<unsigned char>(trimmed[digits])) || trimmed[digits] == '.'))
        ++digits;
    double number = 0.0;
    const auto [end, error] =
        std::from_chars(trimmed.data(), trimmed.data() + digits, number, std::chars_format::fixed);
    if (digits == 0 || error != std::errc() || end != trimmed.data() + digits)
        throw Error("not a size: " + shown + " (a number and a unit, e.g. 16G, 512M or 64GB)");
    const double unit = unitBytes(trimmed.substr(digits));
    if (unit == 0.0)
        throw Error("not a size: " + shown +
                    " has an unknown unit (K, M, G, T are powers of 1024; KB, MB, GB, TB of 1000)");
    const double bytes = std::floor(number * unit);
    if (!(bytes >= 1.0)) throw Error("not a size: " + shown + " is less than one byte");
    if (bytes >= 0x1p64) throw Error("not a size: " + shown + " is too large");
    return std::uint64_t(bytes);
}

}  // namespace qs::pipeline
