#pragma once
// Reads a small JSON side file of a checkpoint (config.json, the shard index, ...). Private to qs_io.
#include <filesystem>

#include <nlohmann/json.hpp>

namespace qs::io::detail {

// Throws qs::Error naming the file when it cannot be read or is not valid JSON.
nlohmann::json readJsonFile(const std::filesystem::path& path);

}  // namespace qs::io::detail
