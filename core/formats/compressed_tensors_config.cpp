#include "compressed_tensors_config.h"

namespace qs::formats::detail {

namespace {

nlohmann::json floatArgs(int groupSize, const char* strategy) {
    return {{"num_bits", 4},        {"type", "float"},
            {"symmetric", true},    {"group_size", groupSize},
            {"strategy", strategy}, {"dynamic", false},
            {"actorder", nullptr},  {"block_structure", nullptr},
            {"observer", "minmax"}, {"observer_kwargs", nlohmann::json::object()}};
}

}  // namespace

nlohmann::json ctNvfp4WeightArgs() { return floatArgs(16, "tensor_group"); }

nlohmann::json ctMxfp4WeightArgs() { return floatArgs(32, "group"); }

nlohmann::json ctFp8WeightArgs(const char* strategy) {
    return {{"num_bits", 8},        {"type", "float"},
            {"symmetric", true},    {"group_size", nullptr},
            {"strategy", strategy}, {"dynamic", false},
            {"actorder", nullptr},  {"block_structure", nullptr},
            {"observer", "minmax"}, {"observer_kwargs", nlohmann::json::object()}};
}

nlohmann::json ctDynamicTokenActivations() {
    return {{"num_bits", 8},       {"type", "float"},
            {"symmetric", true},   {"group_size", nullptr},
            {"strategy", "token"}, {"dynamic", true},
            {"actorder", nullptr}, {"block_structure", nullptr},
            {"observer", nullptr}, {"observer_kwargs", nlohmann::json::object()}};
}

nlohmann::json ctStaticTensorActivations() { return ctFp8WeightArgs("tensor"); }

nlohmann::json ctNvfp4Activations() {
    nlohmann::json args = ctNvfp4WeightArgs();
    args["dynamic"] = "local";
    return args;
}

nlohmann::json ctFp8KvCacheScheme() { return ctFp8WeightArgs("tensor"); }

nlohmann::json ctScheme(nlohmann::json targets, nlohmann::json weights, const std::string& format,
                        nlohmann::json inputActivations) {
    return {{"targets", std::move(targets)},
            {"weights", std::move(weights)},
            {"input_activations", std::move(inputActivations)},
            {"output_activations", nullptr},
            {"format", format}};
}

nlohmann::json ctQuantizationConfig(nlohmann::json configGroups, const std::string& format,
                                    const std::vector<std::string>& ignore, nlohmann::json kvCacheScheme) {
    return {{"quant_method", "compressed-tensors"},
            {"format", format},
            {"quantization_status", "compressed"},
            {"config_groups", std::move(configGroups)},
            {"ignore", ignore},
            {"kv_cache_scheme", std::move(kvCacheScheme)},
            {"sparsity_config", nlohmann::json::object()},
            {"global_compression_ratio", nullptr}};
}

}  // namespace qs::formats::detail
