#pragma once
// `quantscope-cli quantize PATH --method M --out DIR`: quantizes a dense checkpoint with one method
// and exports it in a layout its consumers load (GPTQ, AWQ, FP8, compressed-tensors, ...). Shapes are
// checked against the chosen layout before the quantization starts, so a refused export costs nothing.
#include <CLI/CLI.hpp>

namespace qs::cli {

void registerQuantize(CLI::App& app);

}  // namespace qs::cli
