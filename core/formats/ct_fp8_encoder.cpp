// compressed-tensors float-quantized writer, docs/formats/compressed-tensors.md, with the FP8_DYNAMIC scheme:
// `weight` F8_E4M3 [N, K], `weight_scale` F32 [N, 1] (per channel) or [1] (per tensor), multiplied;
// activations quantized per token at run time (dynamic), so no input_scale. vLLM runs it as
// CompressedTensorsW8A8Fp8; it is also the home of per-channel FP8, which quant_method "fp8" lacks.
#include "encoders.h"
#include "fp8_encoding.h"
#include "qs/error.h"
#include "tensor_encoding.h"

namespace qs::formats::detail {

namespace {

using quant::QuantizedLinear;

// The compressed-tensors release whose layout this follows (docs/formats/compressed-tensors.md).
constexpr const char* kCtVersion = "0.12.2";

nlohmann::json weightArgs(const char* strategy) {
    return {{"num_bits", 8},          {"type", "float"},   {"symmetric", true},  {"strategy", strategy},
            {"group_size", nullptr},  {"block_structure", nullptr}, {"dynamic", false}, {"actorder", nullptr},
            {"observer", "minmax"},   {"observer_kwargs", nlohmann::json::object()}};
}

nlohmann::json dynamicTokenActivations() {
    return {{"num_bits", 8},         {"type", "float"},   {"symmetric", true}, {"strategy", "token"},
            {"group_size", nullptr}, {"block_structure", nullptr}, {"dynamic", true}, {"actorder", nullptr},
            {"observer", nullptr},   {"observer_kwargs", nlohmann::json::object()}};
}

class CtFp8DynamicEncoder final : public LinearEncoder {
public:
    std::string_view name() const override { return "ct-fp8-dynamic"; }

    std::string_view description() const override {
        return "compressed-tensors FP8_DYNAMIC (per-channel or per-tensor E4M3 weights, dynamic per-token activations): vLLM, transformers";
    }

    std::string refusal(const QuantizedLinear& q) const override {
        if (auto p = fp8CodesProblem(q); !p.empty()) return p;
        if (fp8PerChannel(q) || fp8PerTensor(q)) return "";
        return "ct-fp8-dynamic stores one scale per output channel or per tensor, not " + std::to_string(q.blockRows) + "x" +
               std::to_string(q.blockCols) + " blocks (use --format fp8 for 128x128 blocks)";
    }

    std::vector<EncodedTensor> encode(const std::string& prefix, const QuantizedLinear& q) const override {
        if (auto why = refusal(q); !why.empty()) throw Error(prefix + ": cannot write as ct-fp8-dynamic: " + why);
        std::vector<EncodedTensor> out;
        out.push_back(fp8WeightTensor(prefix, q));
        const std::vector<std::int64_t> shape = fp8PerChannel(q) ? std::vector<std::int64_t>{q.rows, 1} : std::vector<std::int64_t>{1};
        out.push_back(matrixTensor(prefix + ".weight_scale", io::DType::F32, shape, q.scales));
        return out;
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        if (scheme.linears.empty()) throw Error("ct-fp8-dynamic export without quantized linears");
        const bool channel = fp8PerChannel(*scheme.linears.front().second);
        for (const auto& [prefix, q] : scheme.linears)
            if (fp8PerChannel(*q) != channel)
                throw Error("ct-fp8-dynamic writes one scale granularity for the whole model, but " + prefix + " differs from " +
                            scheme.linears.front().first);
        const nlohmann::json group = {{"targets", {"Linear"}},
                                      {"weights", weightArgs(channel ? "channel" : "tensor")},
                                      {"input_activations", dynamicTokenActivations()},
                                      {"output_activations", nullptr},
                                      {"format", "float-quantized"}};
        return {{"quant_method", "compressed-tensors"},
                {"version", kCtVersion},
                {"format", "float-quantized"},
                {"quantization_status", "compressed"},
                {"config_groups", {{"group_0", group}}},
                {"ignore", scheme.denseLinears},
                {"kv_cache_scheme", nullptr},
                {"global_compression_ratio", nullptr},
                {"sparsity_config", nlohmann::json::object()}};
    }
};

}  // namespace

const LinearEncoder& ctFp8DynamicEncoder() {
    static const CtFp8DynamicEncoder encoder;
    return encoder;
}

}  // namespace qs::formats::detail
