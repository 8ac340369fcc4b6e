// "ct-nvfp4": compressed-tensors nvfp4-pack-quantized (docs/formats/compressed-tensors.md), NVFP4A16 or,
// for an nvfp4-w4a4 result, the NVFP4 preset's W4A4:
//   <p>.weight_packed        U8 [N, K/2]       E2M1 codes, EVEN element in the LOW nibble
//   <p>.weight_scale         F8_E4M3 [N, K/16] the block scales
//   <p>.weight_global_scale  F32 [1]           a DIVISOR: W = e2m1 * (weight_scale / weight_global_scale)
//   <p>.input_global_scale   F32 [1]           W4A4 only: the calibrated input global scale, a divisor too
// QuantScope's global scales multiply (ModelOpt's weight_scale_2, input_scale), so the stored divisors
// are their reciprocals (vLLM's CompressedTensorsW4A4Fp4 inverts them back). With an FP8 KV cache,
// self_attn.k_scale / v_scale and kv_cache_scheme.
#include "compressed_tensors_config.h"
#include "encoder_support.h"
#include "encoders.h"
#include "fp4_encoding.h"
#include "serving_scales.h"
#include "tensor_encoding.h"

namespace qs::formats::detail {

namespace {

class CtNvfp4Encoder final : public LinearEncoder {
public:
    std::string_view name() const override { return "ct-nvfp4"; }

    std::string_view description() const override {
        return "compressed-tensors nvfp4-pack-quantized, FP4 weights with E4M3 scales per 16 and a global divisor "
               "(NVFP4A16; vLLM, transformers)";
    }

    std::string layoutRefusal(const quant::QuantizedLinear& q) const override { return fp4Refusal(q, kNvfp4Layout); }
    bool storesInput(quant::ActivationFormat f) const override {
        return f == quant::ActivationFormat::None || f == quant::ActivationFormat::Nvfp4;
    }
    bool storesKvCacheScales() const override { return true; }

    std::vector<EncodedTensor> encode(const std::string& prefix, const quant::QuantizedLinear& q) const override {
        requireEncodable(*this, prefix, q);
        const float divisor = exactReciprocal(q.globalScale);
        std::vector<EncodedTensor> out;
        out.push_back(byteTensor(prefix + ".weight_packed", io::DType::U8, {q.rows, q.cols / 2}, packE2m1Codes(q)));
        out.push_back(
            byteTensor(prefix + ".weight_scale", io::DType::F8_E4M3, {q.rows, q.cols / 16}, e4m3ScaleBytes(q)));
        out.push_back(floatTensor(prefix + ".weight_global_scale", io::DType::F32, {1}, &divisor));
        if (q.input.active()) {
            const float inputDivisor = exactReciprocal(q.input.scale);
            out.push_back(floatTensor(prefix + ".input_global_scale", io::DType::F32, {1}, &inputDivisor));
        }
        for (auto& t : kvCacheScaleTensors(prefix, q, KvScaleNaming::AttentionModule)) out.push_back(std::move(t));
        return out;
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        const bool w4a4 = commonInputFormat(scheme, name()) == quant::ActivationFormat::Nvfp4;
        nlohmann::json groups = {{"group_0", ctScheme({"Linear"}, ctNvfp4WeightArgs(), "nvfp4-pack-quantized",
                                                      w4a4 ? ctNvfp4Activations() : nlohmann::json(nullptr))}};
        return ctQuantizationConfig(std::move(groups), "nvfp4-pack-quantized", scheme.denseLinears,
                                    anyKvCacheScale(scheme) ? ctFp8KvCacheScheme() : nlohmann::json(nullptr));
    }
};

}  // namespace

const LinearEncoder& ctNvfp4Encoder() {
    static const CtNvfp4Encoder encoder;
    return encoder;
}

}  // namespace qs::formats::detail
