#pragma once
// `quantscope-cli logits PATH --ids 1,2,3 [--json FILE]`: the model's next-token logits at every
// position of the given token ids, from one forward pass (on the CPU or the device), so that another
// implementation (transformers, llama.cpp) can be compared with ours on the same ids.
#include <CLI/CLI.hpp>

namespace qs::cli {

void registerLogits(CLI::App& app);

}  // namespace qs::cli
