#pragma once
// `quantscope-cli inspect PATH [--json] [--tensors] [--stats] [--filter REGEX] [--threads N]`:
// what a checkpoint holds (architecture, size, dtypes, quantization format), its tensors, and
// per-tensor statistics computed in parallel over the memory-mapped data.
#include <CLI/CLI.hpp>

namespace qs::cli {

void registerInspect(CLI::App& app);

}  // namespace qs::cli
