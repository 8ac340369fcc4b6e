#pragma once
// `quantscope-cli diff A B [--original O]`: two quantizations of one model side by side, per quantized
// linear (formats::diffQuantizations), as the app's Side by side tab shows them.
#include <CLI/CLI.hpp>

namespace qs::cli {

void registerDiff(CLI::App& app);

}  // namespace qs::cli
