#pragma once
// The quantization config of a checkpoint in one shape: config.json's quantization_config, else
// quantize_config.json (AutoGPTQ), else hf_quant_config.json (ModelOpt, whose nested
// {"producer", "quantization": {...}} form is flattened to the config.json form), else {}.
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/json_value.h"

namespace qs::formats::detail {

struct QuantConfig {
    nlohmann::json config;  // {} when the checkpoint has none
    std::string source;     // "<root>/config.json: quantization_config", ...; "" when there is none
};

QuantConfig loadQuantConfig(const io::Checkpoint& checkpoint);

// A value of the quantization config that cannot be used as it stands. Codecs throw it knowing the
// key but not the file; LinearReader and detect(), which know the file, rethrow it as qs::Error
// prefixed with QuantConfig::source.
class ConfigError : public Error {
public:
    using Error::Error;
};
// Rethrows `e` as a qs::Error naming `source`.
[[noreturn]] void rethrowWithSource(const ConfigError& e, const std::string& source);

// Readers of config values. Absent or null keys give the fallback; a present value of the wrong
// type or out of range is a ConfigError naming the key (under `at`, the object's path within the
// config, e.g. "config_groups.group_0.weights"), never a silent fallback. Producers quote numbers and
// write booleans as 0/1 or "true" now and then; those are accepted.
int jsonInt(const nlohmann::json& j, std::string_view key, int fallback, io::IntRange range, std::string_view at = "");
bool jsonBool(const nlohmann::json& j, std::string_view key, bool fallback, std::string_view at = "");
std::string jsonString(const nlohmann::json& j, std::string_view key, std::string fallback = "",
                       std::string_view at = "");
std::string lowerCase(std::string s);

}  // namespace qs::formats::detail
