// "ct-nvfp4": compressed-tensors nvfp4-pack-quantized (docs/formats/compressed-tensors.md), weight-only (NVFP4A16):
//   <p>.weight_packed        U8 [N, K/2]       E2M1 codes, EVEN element in the LOW nibble
//   <p>.weight_scale         F8_E4M3 [N, K/16] the block scales
//   <p>.weight_global_scale  F32 [1]           a DIVISOR: W = e2m1 * (weight_scale / weight_global_scale)
// QuantScope's global scale multiplies (ModelOpt's weight_scale_2), so the stored divisor is its
// reciprocal. No input_global_scale: QuantScope measures no activation range, and the W4A16 scheme
// (input_activations null) is the one vLLM (CompressedTensorsW4A16Fp4) loads without it.
#include <cmath>
#include <initializer_list>
#include <limits>

#include "compressed_tensors_config.h"
#include "encoder_support.h"
#include "encoders.h"
#include "fp4_encoding.h"
#include "tensor_encoding.h"

namespace qs::formats::detail {

namespace {

// vLLM converts with weight_scale_2 = 1 / weight_global_scale. Where a float exists whose reciprocal
// is the global scale exactly, store it, so that both vLLM and QuantScope read back the very same
// multiplier; else (rare) the nearest reciprocal.
float globalDivisorFor(float globalScale) {
    const float nearest = 1.0f / globalScale;
    const float below = std::nextafter(nearest, 0.0f), above = std::nextafter(nearest, std::numeric_limits<float>::infinity());
    for (const float candidate : {nearest, below, above, std::nextafter(below, 0.0f),
                                  std::nextafter(above, std::numeric_limits<float>::infinity())})
        if (1.0f / candidate == globalScale) return candidate;
    return nearest;
}

class CtNvfp4Encoder final : public LinearEncoder {
public:
    std::string_view name() const override { return "ct-nvfp4"; }

    std::string_view description() const override {
        return "compressed-tensors nvfp4-pack-quantized, FP4 weights with E4M3 scales per 16 and a global divisor "
               "(NVFP4A16; vLLM, transformers)";
    }

    std::string refusal(const quant::QuantizedLinear& q) const override { return fp4Refusal(q, kNvfp4Layout); }

    std::vector<EncodedTensor> encode(const std::string& prefix, const quant::QuantizedLinear& q) const override {
        requireEncodable(*this, prefix, q);
        const float divisor = globalDivisorFor(q.globalScale);
        std::vector<EncodedTensor> out;
        out.push_back(byteTensor(prefix + ".weight_packed", io::DType::U8, {q.rows, q.cols / 2}, packE2m1Codes(q)));
        out.push_back(byteTensor(prefix + ".weight_scale", io::DType::F8_E4M3, {q.rows, q.cols / 16}, e4m3ScaleBytes(q)));
        out.push_back(floatTensor(prefix + ".weight_global_scale", io::DType::F32, {1}, &divisor));
        return out;
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        nlohmann::json groups = {{"group_0", ctScheme({"Linear"}, ctNvfp4WeightArgs(), "nvfp4-pack-quantized")}};
        return ctQuantizationConfig(std::move(groups), "nvfp4-pack-quantized", scheme.denseLinears);
    }
};

}  // namespace

const LinearEncoder& ctNvfp4Encoder() {
    static const CtNvfp4Encoder encoder;
    return encoder;
}

}  // namespace qs::formats::detail
