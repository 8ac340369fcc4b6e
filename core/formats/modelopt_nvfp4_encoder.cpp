// "modelopt-nvfp4": NVFP4 as NVIDIA ModelOpt exports it (docs/formats/modelopt.md), weight-only (W4A16_NVFP4):
//   <p>.weight          U8 [N, K/2]       E2M1 codes, EVEN element in the LOW nibble
//   <p>.weight_scale    F8_E4M3 [N, K/16] the block scales
//   <p>.weight_scale_2  F32 []            the global scale, a MULTIPLIER: W = e2m1 * weight_scale * weight_scale_2
// QuantScope's QuantizedLinear holds exactly these numbers. ModelOpt's W4A4 "NVFP4" would also need
// input_scale (the calibrated activation amax / 2688), which QuantScope does not measure; the
// weight-only algorithm is the one vLLM loads without it. Both config.json's quantization_config and
// the legacy hf_quant_config.json are written, as ModelOpt does.
#include "encoder_support.h"
#include "encoders.h"
#include "fp4_encoding.h"
#include "tensor_encoding.h"

namespace qs::formats::detail {

namespace {

constexpr const char* kQuantAlgo = "W4A16_NVFP4";

class ModelOptNvfp4Encoder final : public LinearEncoder {
public:
    std::string_view name() const override { return "modelopt-nvfp4"; }

    std::string_view description() const override {
        return "NVIDIA ModelOpt NVFP4 (W4A16_NVFP4): FP4 weights, E4M3 scales per 16, weight_scale_2 (vLLM modelopt)";
    }

    std::string refusal(const quant::QuantizedLinear& q) const override { return fp4Refusal(q, kNvfp4Layout); }

    std::vector<EncodedTensor> encode(const std::string& prefix, const quant::QuantizedLinear& q) const override {
        requireEncodable(*this, prefix, q);
        std::vector<EncodedTensor> out;
        out.push_back(byteTensor(prefix + ".weight", io::DType::U8, {q.rows, q.cols / 2}, packE2m1Codes(q)));
        out.push_back(byteTensor(prefix + ".weight_scale", io::DType::F8_E4M3, {q.rows, q.cols / 16}, e4m3ScaleBytes(q)));
        out.push_back(floatTensor(prefix + ".weight_scale_2", io::DType::F32, {}, &q.globalScale));
        return out;
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        const nlohmann::json weights = {{"dynamic", false}, {"num_bits", 4}, {"type", "float"}, {"group_size", 16}};
        return {{"config_groups", {{"group_0", {{"weights", weights}, {"input_activations", nullptr}, {"targets", {"Linear"}}}}}},
                {"ignore", scheme.denseLinears},
                {"quant_algo", kQuantAlgo},
                {"producer", producer()},
                {"quant_method", "modelopt"}};
    }

    std::vector<std::pair<std::string, nlohmann::json>> extraFiles(const ExportScheme& scheme) const override {
        const nlohmann::json quantization = {{"quant_algo", kQuantAlgo},
                                             {"kv_cache_quant_algo", nullptr},
                                             {"group_size", 16},
                                             {"exclude_modules", scheme.denseLinears}};
        return {{"hf_quant_config.json", {{"producer", producer()}, {"quantization", quantization}}}};
    }

private:
    static nlohmann::json producer() { return {{"name", "quantscope"}}; }
};

}  // namespace

const LinearEncoder& modelOptNvfp4Encoder() {
    static const ModelOptNvfp4Encoder encoder;
    return encoder;
}

}  // namespace qs::formats::detail
