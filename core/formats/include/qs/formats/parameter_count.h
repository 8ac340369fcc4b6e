#pragma once
// The parameters a checkpoint's model has, as opposed to the elements it stores: a quantized linear
// counts out_features x in_features however its codes are packed (a GPTQ int4 qweight holds eight
// weights per int32, an NVFP4 weight_packed two per byte) and its scales, zeros and g_idx count
// nothing. Everything else (embeddings, norms, biases, dense linears) counts its elements.
#include <cstdint>

#include "qs/formats/format_info.h"
#include "qs/io/checkpoint.h"

namespace qs::formats {

// `format` is formats::detect(checkpoint).
std::int64_t modelParameterCount(const io::Checkpoint& checkpoint, const FormatInfo& format);

}  // namespace qs::formats
