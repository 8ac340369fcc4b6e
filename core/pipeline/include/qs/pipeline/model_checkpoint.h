#pragma once
// Opening a checkpoint to run or write its model (compare, quantize, eval, dequantize), with the
// checks that must come before any work, so that a refusal is one line and writes nothing:
//   - config.json must describe the tensors beside it (formats::requireConfigMatchesTensors): a
//     forward pass built from a config that disagrees with them runs another model; `inspect` only
//     warns about the same disagreements;
//   - no dense linear may hold NaN or Inf (checked by streaming the stored values). Quantized linears
//     are checked when they are decoded (formats::LinearReader), since decoding is the work itself.
#include <filesystem>

#include "qs/formats/format_info.h"
#include "qs/io/checkpoint.h"

namespace qs::pipeline {

// Throws qs::Error naming the linear and the count, unless `allow`.
void requireFiniteDenseLinears(const io::Checkpoint& checkpoint, const formats::FormatInfo& format, bool allow);

// io::Checkpoint::open, then both checks above; throws qs::Error naming what disagrees.
io::Checkpoint openModelCheckpoint(const std::filesystem::path& path, bool allowNonFinite);

}  // namespace qs::pipeline
