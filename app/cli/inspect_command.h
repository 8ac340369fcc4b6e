#pragma once
// `quantscope-cli inspect PATH [--json] [--tensors] [--stats] [--filter REGEX] [--threads N]`:
// what a checkpoint holds (architecture, size, dtypes, quantization format), its tensors, and
// per-tensor statistics computed in parallel over the memory-mapped data. With `--hessian LAYER`
// (inspect_hessian.h): the diagonal of that layer's input Hessians instead.
#include <CLI/CLI.hpp>

namespace qs::cli {

void registerInspect(CLI::App& app);

}  // namespace qs::cli
