#pragma once
// `quantscope-cli dequantize PATH --out DIR [--dtype bf16|f16|f32]`: any checkpoint QuantScope reads,
// written back as a dense one (quantized linears decoded, everything else copied).
#include <CLI/CLI.hpp>

namespace qs::cli {

void registerDequantize(CLI::App& app);

}  // namespace qs::cli
