#pragma once
// The quantization config of a checkpoint in one shape: config.json's quantization_config, else
// quantize_config.json (AutoGPTQ), else hf_quant_config.json (ModelOpt, whose nested
// {"producer", "quantization": {...}} form is flattened to the config.json form), else {}.
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "qs/io/checkpoint.h"

namespace qs::formats::detail {

nlohmann::json loadQuantConfig(const io::Checkpoint& checkpoint);

// A JSON file's content; {} when the file does not exist, a qs::Error naming it when it is not JSON.
nlohmann::json readJsonFile(const std::filesystem::path& path);

// Lenient readers: producers write numbers as strings and booleans as 0/1 now and then.
int jsonInt(const nlohmann::json& j, std::string_view key, int fallback);
bool jsonBool(const nlohmann::json& j, std::string_view key, bool fallback);
std::string jsonString(const nlohmann::json& j, std::string_view key, std::string fallback = "");
std::string lowerCase(std::string s);

}  // namespace qs::formats::detail
