#pragma once
// `quantscope-cli compare PATH --methods ...`: quantizes a checkpoint with several methods side by
// side and prints, per method, bits per weight and the KL divergence from the original model.
#include <CLI/CLI.hpp>

namespace qs::cli {

void registerCompare(CLI::App& app);

}  // namespace qs::cli
