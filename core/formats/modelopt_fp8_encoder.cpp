// "modelopt-fp8": FP8 W8A8 as NVIDIA ModelOpt exports it (quant_algo "FP8", docs/formats/modelopt.md):
//   <p>.weight        F8_E4M3 [N, K]  codes
//   <p>.weight_scale  F32 []          one scale per tensor, a MULTIPLIER: W = e4m3 * weight_scale
//   <p>.input_scale   F32 []          the calibrated static input scale, amax / 448: x ~ e4m3(x / s) * s
// vLLM's ModelOptFp8LinearMethod runs it (per-tensor weight and input scales, so an fp8-w8a8 result);
// with an FP8 KV cache, self_attn.k_proj.k_scale / v_proj.v_scale and kv_cache_quant_algo "FP8".
#include "encoder_support.h"
#include "encoders.h"
#include "fp8_encoding.h"
#include "modelopt_config.h"
#include "serving_scales.h"
#include "tensor_encoding.h"

namespace qs::formats::detail {

namespace {

using quant::QuantizedLinear;

class ModelOptFp8Encoder final : public LinearEncoder {
public:
    std::string_view name() const override { return "modelopt-fp8"; }

    std::string_view description() const override {
        return "NVIDIA ModelOpt FP8 (W8A8): E4M3 weights and inputs, per-tensor weight_scale and static input_scale "
               "(vLLM modelopt)";
    }

    std::string layoutRefusal(const QuantizedLinear& q) const override {
        if (auto p = fp8CodesProblem(q); !p.empty()) return p;
        if (!fp8PerTensor(q)) return "ModelOpt FP8 stores one weight scale per tensor (quantize with fp8-w8a8)";
        return "";
    }
    // ModelOpt's FP8 is W8A8 with static scales: a weight-only result has no input_scale to store.
    bool storesInput(quant::ActivationFormat f) const override { return f == quant::ActivationFormat::Fp8Tensor; }
    bool storesKvCacheScales() const override { return true; }

    std::vector<EncodedTensor> encode(const std::string& prefix, const QuantizedLinear& q) const override {
        requireEncodable(*this, prefix, q);
        std::vector<EncodedTensor> out;
        out.push_back(fp8WeightTensor(prefix, q));
        out.push_back(matrixTensor(prefix + ".weight_scale", io::DType::F32, {}, q.scales));
        out.push_back(floatTensor(prefix + ".input_scale", io::DType::F32, {}, &q.input.scale));
        for (auto& t : kvCacheScaleTensors(prefix, q, KvScaleNaming::Projection)) out.push_back(std::move(t));
        return out;
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        return modelOptQuantizationConfig(schemeOf(scheme), scheme);
    }

    std::vector<std::pair<std::string, nlohmann::json>> extraFiles(const ExportScheme& scheme) const override {
        return {{"hf_quant_config.json", modelOptHfQuantConfig(schemeOf(scheme), scheme)}};
    }

private:
    ModelOptScheme schemeOf(const ExportScheme& scheme) const {
        commonInputFormat(scheme, name());
        const nlohmann::json fp8 = {{"dynamic", false}, {"num_bits", 8}, {"type", "float"}};
        return {"FP8", fp8, fp8, std::nullopt, anyKvCacheScale(scheme)};
    }
};

}  // namespace

const LinearEncoder& modelOptFp8Encoder() {
    static const ModelOptFp8Encoder encoder;
    return encoder;
}

}  // namespace qs::formats::detail
