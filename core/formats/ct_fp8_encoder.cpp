// compressed-tensors float-quantized writers (docs/formats/compressed-tensors.md): `weight` F8_E4M3
// [N, K] and `weight_scale` F32 [N, 1] (per channel) or [1] (per tensor), multiplied. vLLM runs both
// as CompressedTensorsW8A8Fp8; they are also the home of per-channel FP8, which quant_method "fp8" lacks.
//   ct-fp8-dynamic  the FP8_DYNAMIC preset: inputs quantized per token at run time, nothing stored
//                   (also the layout of a weight-only per-channel result, which vLLM runs this way)
//   ct-fp8          the FP8 preset (W8A8 static): `input_scale` F32 [1] per linear, calibrated
// With an FP8 KV cache: self_attn.k_scale / v_scale and kv_cache_scheme.
#include "qs/error.h"

#include "compressed_tensors_config.h"
#include "encoders.h"
#include "fp8_encoding.h"
#include "serving_scales.h"
#include "tensor_encoding.h"

namespace qs::formats::detail {

namespace {

using quant::ActivationFormat;
using quant::QuantizedLinear;

// The compressed-tensors release whose layout this follows (docs/formats/compressed-tensors.md).
constexpr const char* kCtVersion = "0.12.2";

class CtFp8Encoder final : public LinearEncoder {
public:
    explicit CtFp8Encoder(bool staticInputs) : static_(staticInputs) {}

    std::string_view name() const override { return static_ ? "ct-fp8" : "ct-fp8-dynamic"; }

    std::string_view description() const override {
        return static_ ? "compressed-tensors FP8 W8A8 (per-channel or per-tensor E4M3 weights, static per-tensor input "
                         "scales): vLLM"
                       : "compressed-tensors FP8_DYNAMIC (per-channel or per-tensor E4M3 weights, dynamic per-token "
                         "activations): vLLM, transformers";
    }

    std::string layoutRefusal(const QuantizedLinear& q) const override {
        if (auto p = fp8CodesProblem(q); !p.empty()) return p;
        if (fp8PerChannel(q) || fp8PerTensor(q)) return "";
        return std::string(name()) + " stores one scale per output channel or per tensor, not " +
               std::to_string(q.blockRows) + "x" + std::to_string(q.blockCols) +
               " blocks (use --format fp8 for 128x128 blocks)";
    }

    bool storesInput(ActivationFormat f) const override {
        return static_ ? f == ActivationFormat::Fp8Tensor
                       : f == ActivationFormat::None || f == ActivationFormat::Fp8Token;
    }
    bool storesKvCacheScales() const override { return true; }

    std::vector<EncodedTensor> encode(const std::string& prefix, const QuantizedLinear& q) const override {
        if (auto why = refusal(q); !why.empty())
            throw Error(prefix + ": cannot write as " + std::string(name()) + ": " + why);
        std::vector<EncodedTensor> out;
        out.push_back(fp8WeightTensor(prefix, q));
        const std::vector<std::int64_t> shape =
            fp8PerChannel(q) ? std::vector<std::int64_t>{q.rows, 1} : std::vector<std::int64_t>{1};
        out.push_back(matrixTensor(prefix + ".weight_scale", io::DType::F32, shape, q.scales));
        if (static_) out.push_back(floatTensor(prefix + ".input_scale", io::DType::F32, {1}, &q.input.scale));
        for (auto& t : kvCacheScaleTensors(prefix, q, KvScaleNaming::AttentionModule)) out.push_back(std::move(t));
        return out;
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        if (scheme.linears.empty()) throw Error(std::string(name()) + " export without quantized linears");
        commonInputFormat(scheme, name());
        const bool channel = fp8PerChannel(*scheme.linears.front().second);
        for (const auto& [prefix, q] : scheme.linears)
            if (fp8PerChannel(*q) != channel)
                throw Error(std::string(name()) + " writes one scale granularity for the whole model, but " + prefix +
                            " differs from " + scheme.linears.front().first);
        nlohmann::json group = ctScheme({"Linear"}, ctFp8WeightArgs(channel ? "channel" : "tensor"), "float-quantized",
                                        static_ ? ctStaticTensorActivations() : ctDynamicTokenActivations());
        nlohmann::json config =
            ctQuantizationConfig({{"group_0", std::move(group)}}, "float-quantized", scheme.denseLinears,
                                 anyKvCacheScale(scheme) ? ctFp8KvCacheScheme() : nlohmann::json(nullptr));
        config["version"] = kCtVersion;
        return config;
    }

private:
    bool static_;
};

}  // namespace

const LinearEncoder& ctFp8DynamicEncoder() {
    static const CtFp8Encoder encoder(false);
    return encoder;
}

const LinearEncoder& ctFp8StaticEncoder() {
    static const CtFp8Encoder encoder(true);
    return encoder;
}

}  // namespace qs::formats::detail
