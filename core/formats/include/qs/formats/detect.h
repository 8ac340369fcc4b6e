#pragma once
// Detection of a checkpoint's quantization format and the per-layer description the CLI prints.
#include <vector>

#include "qs/formats/format_info.h"
#include "qs/io/checkpoint.h"

namespace qs::formats {

// Reads configs and tensor headers only (plus bitsandbytes' small quant_state tensors).
FormatInfo detect(const io::Checkpoint& checkpoint);

// Per quantized linear: bits, group size, act-order, symmetry (what `quantscope-cli inspect` prints).
std::vector<LayerQuantInfo> describeLayers(const io::Checkpoint& checkpoint);

}  // namespace qs::formats
