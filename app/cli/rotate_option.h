#pragma once
// --rotate and --rotation-seed of compare and quantize: QuaRot's Hadamard rotations folded into the weights
// before quantizing (pipeline::JobPlan::rotate).
#include <cstdint>

#include <CLI/CLI.hpp>

namespace qs::cli {

void addRotateOptions(CLI::App& cmd, bool& rotate, std::uint64_t& seed);

}  // namespace qs::cli
