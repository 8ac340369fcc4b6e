#pragma once
// Writing QuantizedLinears through a LinearEncoder and io::CheckpointWriter, then reading them back
// through the format detection and the LinearReader, as a consumer of the export would
// (the GPTQ, AWQ and FP8 encoder tests).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/formats/linear_encoder.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/io/dtype.h"

namespace qs::formats::test {

using NamedLinear = std::pair<std::string, quant::QuantizedLinear>;

// A fresh path under the temp directory (removed first; not created).
std::filesystem::path freshPath(const std::string& name);

// Writes the linears (and config.json with the encoder's quantization_config, and its extra files).
std::filesystem::path writeEncoded(const std::filesystem::path& dir, const LinearEncoder& encoder,
                                   const std::vector<NamedLinear>& linears);

// q with every scale rounded to F16, as the integer layouts store them.
quant::QuantizedLinear withF16Scales(quant::QuantizedLinear q);

// The number of elements where a and b differ in their bit patterns (shapes must match).
std::int64_t bitDifferences(const MatrixF& a, const MatrixF& b);

// The I32 words of a stored tensor.
std::vector<std::uint32_t> storedWords(const io::Checkpoint& checkpoint, const std::string& name);

nlohmann::json readJson(const std::filesystem::path& file);

}  // namespace qs::formats::test
