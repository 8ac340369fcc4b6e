#include "qs/io/json_value.h"

#include <charconv>
#include <cmath>

#include "qs/error.h"

namespace qs::io {

namespace {

[[noreturn]] void refuse(const nlohmann::json& value, const std::string& where, IntRange range) {
    // Quoting the value itself is bounded: Error's text is cut to a sane length.
    throw Error(where + " is " + value.dump() + ", expected an integer from " + std::to_string(range.min) + " to " +
                std::to_string(range.max));
}

}  // namespace

std::string jsonKind(const nlohmann::json& j) {
    using nlohmann::json;
    switch (j.type()) {
        case json::value_t::null: return "null";
        case json::value_t::object: return "an object";
        case json::value_t::array: return "an array";
        case json::value_t::string: return "a string";
        case json::value_t::boolean: return "a boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned: return "an integer";
        case json::value_t::number_float: return "a floating-point number";
        default: return "an unexpected value";
    }
}

std::int64_t jsonInteger(const nlohmann::json& value, const std::string& where, IntRange range) {
    if (value.is_number_unsigned()) {
        const auto v = value.get<std::uint64_t>();
        if (v > static_cast<std::uint64_t>(range.max)) refuse(value, where, range);
        const auto s = static_cast<std::int64_t>(v);  // max < 2^63, and v <= max
        if (s < range.min) refuse(value, where, range);
        return s;
    }
    std::int64_t v = 0;
    if (value.is_number_integer()) {
        v = value.get<std::int64_t>();
    } else if (value.is_number_float()) {
        const double d = value.get<double>();
        // Whole and within int64: 2^63 itself is not, so compare against it exclusively.
        if (!(std::trunc(d) == d && d >= -9.2233720368547758e18 && d < 9.2233720368547758e18))
            refuse(value, where, range);
        v = static_cast<std::int64_t>(d);
    } else if (value.is_string()) {
        const auto& s = value.get_ref<const std::string&>();
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size()) refuse(value, where, range);
    } else {
        refuse(value, where, range);
    }
    if (v < range.min || v > range.max) refuse(value, where, range);
    return v;
}

std::optional<std::int64_t> jsonIntegerField(const nlohmann::json& object, std::string_view key,
                                             const std::string& where, IntRange range) {
    if (!object.is_object()) return std::nullopt;
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::nullopt;
    return jsonInteger(*it, where + ": '" + std::string(key) + "'", range);
}

}  // namespace qs::io
