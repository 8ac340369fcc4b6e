// "modelopt-nvfp4": NVFP4 as NVIDIA ModelOpt exports it (docs/formats/modelopt.md), weight-only
// (W4A16_NVFP4) or, for an nvfp4-w4a4 result, W4A4 (quant_algo NVFP4):
//   <p>.weight          U8 [N, K/2]       E2M1 codes, EVEN element in the LOW nibble
//   <p>.weight_scale    F8_E4M3 [N, K/16] the block scales
//   <p>.weight_scale_2  F32 []            the global scale, a MULTIPLIER: W = e2m1 * weight_scale * weight_scale_2
//   <p>.input_scale     F32 []            W4A4: the calibrated input global scale, amax / (6 * 448)
// QuantScope's QuantizedLinear holds exactly these numbers. With an FP8 KV cache,
// self_attn.k_proj.k_scale / v_proj.v_scale and kv_cache_quant_algo "FP8".
#include "encoder_support.h"
#include "encoders.h"
#include "fp4_encoding.h"
#include "modelopt_config.h"
#include "serving_scales.h"
#include "tensor_encoding.h"

namespace qs::formats::detail {

namespace {

// The scheme of the export: W4A4 when the inputs are quantized too.
ModelOptScheme schemeOf(const ExportScheme& scheme, std::string_view encoder) {
    const nlohmann::json fp4 = {{"dynamic", false}, {"num_bits", 4}, {"type", "float"}, {"group_size", 16}};
    const bool w4a4 = commonInputFormat(scheme, encoder) == quant::ActivationFormat::Nvfp4;
    return {w4a4 ? "NVFP4" : "W4A16_NVFP4", fp4, w4a4 ? fp4 : nlohmann::json(nullptr), 16, anyKvCacheScale(scheme)};
}

class ModelOptNvfp4Encoder final : public LinearEncoder {
public:
    std::string_view name() const override { return "modelopt-nvfp4"; }

    std::string_view description() const override {
        return "NVIDIA ModelOpt NVFP4 (W4A16_NVFP4, or NVFP4 W4A4 with input_scale): FP4 weights, E4M3 scales per 16, "
               "weight_scale_2 (vLLM modelopt)";
    }

    std::string layoutRefusal(const quant::QuantizedLinear& q) const override { return fp4Refusal(q, kNvfp4Layout); }
    bool storesInput(quant::ActivationFormat f) const override {
        return f == quant::ActivationFormat::None || f == quant::ActivationFormat::Nvfp4;
    }
    bool storesKvCacheScales() const override { return true; }

    std::vector<EncodedTensor> encode(const std::string& prefix, const quant::QuantizedLinear& q) const override {
        requireEncodable(*this, prefix, q);
        std::vector<EncodedTensor> out;
        out.push_back(byteTensor(prefix + ".weight", io::DType::U8, {q.rows, q.cols / 2}, packE2m1Codes(q)));
        out.push_back(
            byteTensor(prefix + ".weight_scale", io::DType::F8_E4M3, {q.rows, q.cols / 16}, e4m3ScaleBytes(q)));
        out.push_back(floatTensor(prefix + ".weight_scale_2", io::DType::F32, {}, &q.globalScale));
        if (q.input.active()) out.push_back(floatTensor(prefix + ".input_scale", io::DType::F32, {}, &q.input.scale));
        for (auto& t : kvCacheScaleTensors(prefix, q, KvScaleNaming::Projection)) out.push_back(std::move(t));
        return out;
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        return modelOptQuantizationConfig(schemeOf(scheme, name()), scheme);
    }

    std::vector<std::pair<std::string, nlohmann::json>> extraFiles(const ExportScheme& scheme) const override {
        return {{"hf_quant_config.json", modelOptHfQuantConfig(schemeOf(scheme, name()), scheme)}};
    }
};

}  // namespace

const LinearEncoder& modelOptNvfp4Encoder() {
    static const ModelOptNvfp4Encoder encoder;
    return encoder;
}

}  // namespace qs::formats::detail
