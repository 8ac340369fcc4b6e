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
// Static FP8 inputs, one calibrated scale per linear (input_scale [1]: the FP8 / W8A8 preset).
nlohmann::json ctStaticTensorActivations();
// NVFP4 inputs (the NVFP4 preset's W4A4): blocks of 16 scaled at run time ("local") under the stored
// input_global_scale.
nlohmann::json ctNvfp4Activations();
// kv_cache_scheme of an FP8 KV cache with calibrated per-tensor k_scale / v_scale.
nlohmann::json ctFp8KvCacheScheme();

// One QuantizationScheme: weight-only (input_activations null unless given), with its compression format.
nlohmann::json ctScheme(nlohmann::json targets, nlohmann::json weights, const std::string& format,
                        nlohmann::json inputActivations = nullptr);

// The whole quantization_config; `format` is the one format of every group or "mixed-precision".
// `kvCacheScheme`: null (the cache keeps the model's dtype) or ctFp8KvCacheScheme().
nlohmann::json ctQuantizationConfig(nlohmann::json configGroups, const std::string& format,
                                    const std::vector<std::string>& ignore, nlohmann::json kvCacheScheme = nullptr);

}  // namespace qs::formats::detail
