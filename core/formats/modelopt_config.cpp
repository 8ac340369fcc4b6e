#include "modelopt_config.h"

namespace qs::formats::detail {
namespace {

nlohmann::json producer() { return {{"name", "quantscope"}}; }

}  // namespace

nlohmann::json modelOptQuantizationConfig(const ModelOptScheme& s, const ExportScheme& scheme) {
    nlohmann::json config = {
        {"config_groups",
         {{"group_0", {{"weights", s.weights}, {"input_activations", s.inputActivations}, {"targets", {"Linear"}}}}}},
        {"ignore", scheme.denseLinears},
        {"quant_algo", s.quantAlgo},
        {"producer", producer()},
        {"quant_method", "modelopt"}};
    // ModelOpt's convert_hf_quant_config_format writes the cache's scheme only when it is quantized.
    if (s.kvCacheFp8) config["kv_cache_scheme"] = {{"dynamic", false}, {"num_bits", 8}, {"type", "float"}};
    return config;
}

nlohmann::json modelOptHfQuantConfig(const ModelOptScheme& s, const ExportScheme& scheme) {
    nlohmann::json quantization = {
        {"quant_algo", s.quantAlgo},
        {"kv_cache_quant_algo", s.kvCacheFp8 ? nlohmann::json("FP8") : nlohmann::json(nullptr)},
        {"exclude_modules", scheme.denseLinears}};
    if (s.groupSize) quantization["group_size"] = *s.groupSize;
    return {{"producer", producer()}, {"quantization", quantization}};
}

}  // namespace qs::formats::detail
