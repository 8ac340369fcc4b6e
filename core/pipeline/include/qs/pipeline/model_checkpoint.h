#pragma once
// Opening a checkpoint to run its model (compare, quantize, eval): config.json must describe the
// tensors beside it (formats::requireConfigMatchesTensors), since a forward pass built from a config
// that disagrees with them runs another model. `inspect` only warns about the same disagreements.
#include <filesystem>

#include "qs/io/checkpoint.h"

namespace qs::pipeline {

// io::Checkpoint::open, then throws qs::Error naming every disagreement between config and tensors.
io::Checkpoint openModelCheckpoint(const std::filesystem::path& path);

}  // namespace qs::pipeline
