#pragma once
// `quantscope-cli eval ORIGINAL QUANTIZED`: the KL divergence of a quantized checkpoint (any readable
// format) from its original on held-out text, printed as llama.cpp's --kl-divergence report.
#include <CLI/CLI.hpp>

namespace qs::cli {

void registerEval(CLI::App& app);

}  // namespace qs::cli
