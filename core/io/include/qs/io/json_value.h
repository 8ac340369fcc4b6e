#pragma once
// Integers read from JSON files (config.json, quantization configs, quant_state blobs): the one
// accessor that checks type, integrality and range, so that bits = 4294967300 is not read as 4, nor
// group_size = 64.9 as 64. Accepted: a JSON integer, a number with an integral value (4.0), and a
// string of decimal digits (some producers quote numbers). Anything else is a qs::Error that names
// where the value is ("<file>: quantization_config: 'bits'") and what was expected.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace qs::io {

struct IntRange {
    std::int64_t min = std::numeric_limits<std::int32_t>::min();
    std::int64_t max = std::numeric_limits<std::int32_t>::max();
};

// `value` itself; `where` names it in messages.
std::int64_t jsonInteger(const nlohmann::json& value, const std::string& where, IntRange range = {});

// object[key] when present and not null, else nullopt; an `object` that is not an object has no keys.
// Messages read "<where>: 'key' is ..."; `where` names the file and, when nested, the object's path.
std::optional<std::int64_t> jsonIntegerField(const nlohmann::json& object, std::string_view key,
                                             const std::string& where, IntRange range = {});

// "a string", "an integer", ... for messages.
std::string jsonKind(const nlohmann::json& value);

}  // namespace qs::io
