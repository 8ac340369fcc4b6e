#pragma once
// A QuantizedLinear as named tensors plus a JSON header, exactly: what a work folder keeps of a
// finished linear so that a resumed run continues from the same codes, scales and measurements.
// Not an export format (the formats in core/formats are): the layout is QuantScope's own and only
// ever read back by the same build's readQuantizedLinear.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/dtype.h"
#include "qs/io/safetensors_file.h"
#include "qs/quant/quantized_linear.h"

namespace qs::pipeline {

// Receives one part: its tensor name (`prefix` + "." + part), dtype, shape and bytes.
using TensorSink = std::function<void(const std::string& name, io::DType dtype, const std::vector<std::int64_t>& shape,
                                      std::span<const std::byte> bytes)>;

// The header fields of `q` as JSON (NaN measurements as null); its non-empty parts go to `sink`.
nlohmann::json writeQuantizedLinear(const quant::QuantizedLinear& q, const std::string& prefix, const TensorSink& sink);

// The linear written under `prefix`, from its header and `file`'s tensors. Throws qs::Error naming
// the file and tensor when a part is missing or its size disagrees with the header.
quant::QuantizedLinear readQuantizedLinear(const nlohmann::json& header, const io::SafetensorsFile& file,
                                           const std::string& prefix);

}  // namespace qs::pipeline
