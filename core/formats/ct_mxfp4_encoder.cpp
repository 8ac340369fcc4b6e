// "ct-mxfp4": compressed-tensors mxfp4-pack-quantized (docs/formats/compressed-tensors.md), weight-only (MXFP4A16):
//   <p>.weight_packed  U8 [N, K/2]   E2M1 codes, EVEN element in the LOW nibble
//   <p>.weight_scale   U8 [N, K/32]  E8M0 exponents, bias 127: W = e2m1 * 2^(weight_scale - 127)
// No global scale. vLLM's compressed-tensors MXFP4 scheme wants strategy group, group_size 32.
#include "compressed_tensors_config.h"
#include "encoder_support.h"
#include "encoders.h"
#include "fp4_encoding.h"
#include "tensor_encoding.h"

namespace qs::formats::detail {

namespace {

class CtMxfp4Encoder final : public LinearEncoder {
public:
    std::string_view name() const override { return "ct-mxfp4"; }

    std::string_view description() const override {
        return "compressed-tensors mxfp4-pack-quantized, FP4 weights with a power-of-two (E8M0) scale per 32 (vLLM)";
    }

    std::string layoutRefusal(const quant::QuantizedLinear& q) const override { return fp4Refusal(q, kMxfp4Layout); }

    std::vector<EncodedTensor> encode(const std::string& prefix, const quant::QuantizedLinear& q) const override {
        requireEncodable(*this, prefix, q);
        std::vector<EncodedTensor> out;
        out.push_back(byteTensor(prefix + ".weight_packed", io::DType::U8, {q.rows, q.cols / 2}, packE2m1Codes(q)));
        out.push_back(byteTensor(prefix + ".weight_scale", io::DType::U8, {q.rows, q.cols / 32}, e8m0ScaleBytes(q)));
        return out;
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        nlohmann::json groups = {{"group_0", ctScheme({"Linear"}, ctMxfp4WeightArgs(), "mxfp4-pack-quantized")}};
        return ctQuantizationConfig(std::move(groups), "mxfp4-pack-quantized", scheme.denseLinears);
    }
};

}  // namespace

const LinearEncoder& ctMxfp4Encoder() {
    static const CtMxfp4Encoder encoder;
    return encoder;
}

}  // namespace qs::formats::detail
