#pragma once
// The two configs a ModelOpt export carries (docs/formats/modelopt.md): config.json's
// quantization_config (config_groups form, quant_method "modelopt") and the legacy hf_quant_config.json
// ({"producer", "quantization": {quant_algo, kv_cache_quant_algo, group_size, exclude_modules}}).
// vLLM reads either; both are written, as ModelOpt does.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "qs/formats/linear_encoder.h"

namespace qs::formats::detail {

struct ModelOptScheme {
    std::string quantAlgo;            // "FP8", "NVFP4", "W4A16_NVFP4"
    nlohmann::json weights;           // {"dynamic": false, "num_bits": ..., "type": "float"[, "group_size": ...]}
    nlohmann::json inputActivations;  // the same for the inputs, or null (weight-only)
    std::optional<int> groupSize;     // hf_quant_config's group_size (NVFP4: 16)
    bool kvCacheFp8 = false;          // kv_cache_quant_algo "FP8", kv_cache_scheme
};

nlohmann::json modelOptQuantizationConfig(const ModelOptScheme& s, const ExportScheme& scheme);
nlohmann::json modelOptHfQuantConfig(const ModelOptScheme& s, const ExportScheme& scheme);

}  // namespace qs::formats::detail
