#pragma once
// The quantization_config a compressed-tensors checkpoint carries (docs/formats/compressed-tensors.md), as the writers
// of ct-nvfp4, ct-mxfp4 and ct-mixed fill it: QuantizationArgs per scheme, config groups, and the
// top level (quant_method, format, quantization_status, ignore).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qs::formats::detail {

// QuantizationArgs of the weights: NVFP4 (float 4-bit, tensor_group of 16, which vLLM's
// CompressedTensorsW4A16Fp4 requires) and MXFP4 (float 4-bit, group of 32).
nlohmann::json ctNvfp4WeightArgs();
nlohmann::json ctMxfp4WeightArgs();
// FP8 E4M3 weights with one scale per output channel ("channel") or per tensor ("tensor"), and the
// activations quantized per token at run time (FP8_DYNAMIC): nothing stored for them.
nlohmann::json ctFp8WeightArgs(const char* strategy);
nlohmann::json ctDynamicTokenActivations();

// One QuantizationScheme: weight-only (input_activations null unless given), with its compression format.
nlohmann::json ctScheme(nlohmann::json targets, nlohmann::json weights, const std::string& format,
                        nlohmann::json inputActivations = nullptr);

// The whole quantization_config; `format` is the one format of every group or "mixed-precision".
nlohmann::json ctQuantizationConfig(nlohmann::json configGroups, const std::string& format, const std::vector<std::string>& ignore);

}  // namespace qs::formats::detail
