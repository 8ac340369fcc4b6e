#pragma once
// --matmul auto|f32|bf16 of compare and quantize: the calibration passes' GEMMs (pipeline/matmul_choice.h).
#include <string>

#include <CLI/CLI.hpp>

namespace qs::cli {

void addMatmulOption(CLI::App& cmd, std::string& matmul);

}  // namespace qs::cli
