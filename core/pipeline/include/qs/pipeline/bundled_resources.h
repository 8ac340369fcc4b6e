#pragma once
// Where the files QuantScope ships (demo checkpoint, calibration and evaluation text) are found:
// $QS_RESOURCES_DIR, then <executable>/../share/quantscope (installed), then the source tree's
// resources/ (a build that was not installed).
#include <filesystem>
#include <optional>

namespace qs::pipeline {

std::optional<std::filesystem::path> bundledResource(const std::filesystem::path& relative);

}  // namespace qs::pipeline
