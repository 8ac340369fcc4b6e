#pragma once
// Opening a checkpoint to run or write its model (compare, quantize, eval, dequantize), with the
// checks that must come before any work, so that a refusal is one line and writes nothing:
//   - config.json must describe the tensors beside it (formats::requireConfigMatchesTensors): a
//     forward pass built from a config that disagrees with them runs another model; `inspect` only
//     warns about the same disagreements;
//   - no dense linear may hold NaN or Inf (checked by streaming the stored values). Quantized linears
//     are checked when they are decoded (formats::LinearReader), since decoding is the work itself.
#include <filesystem>
#include <string>

#include "qs/formats/format_info.h"
#include "qs/io/checkpoint.h"

namespace qs::pipeline {

// Throws qs::Error naming the linear and the count, unless `allow`.
void requireFiniteDenseLinears(const io::Checkpoint& checkpoint, const formats::FormatInfo& format, bool allow);

// Quantizing and the Hessian start from the original weights: a checkpoint whose linears are
// already quantized is refused with what it holds and what to use instead ("" when it is dense).
// Quantizing its decoded weights would compound the first rounding's error with a second one.
// gpt-oss's MXFP4 experts, as it is released, are its original weights: not refused.
std::string quantizedSourceRefusal(const io::Checkpoint& checkpoint, const formats::FormatInfo& format);
// Throws qs::Error with quantizedSourceRefusal's message, when there is one.
void requireDenseSource(const io::Checkpoint& checkpoint, const formats::FormatInfo& format);

// io::Checkpoint::open, then both checks above; throws qs::Error naming what disagrees.
io::Checkpoint openModelCheckpoint(const std::filesystem::path& path, bool allowNonFinite);

}  // namespace qs::pipeline
