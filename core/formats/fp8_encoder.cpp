// FP8 writer (`quant_method: "fp8"`), docs/formats/fp8.md: `weight` F8_E4M3 [N, K] and either
//   weight_scale_inv F32 [ceil(N/128), ceil(K/128)]  (blocks; config weight_block_size [128, 128]) or
//   weight_scale F32 []                              (one scale per tensor; no weight_block_size).
// Both are dequantization multipliers (W = e4m3 * scale), whatever the name says. Activations are
// quantized dynamically by the consumer (activation_scheme "dynamic"), or, for an fp8-w8a8 result
// (per-tensor weights), with the calibrated `input_scale` F32 [] of each linear (activation_scheme
// "static"; vLLM requires dynamic inputs with block weights). With an FP8 KV cache:
// self_attn.k_scale / v_scale, which vLLM's fp8 method loads when run with --kv-cache-dtype fp8.
#include "qs/error.h"

#include "encoders.h"
#include "fp8_encoding.h"
#include "serving_scales.h"
#include "tensor_encoding.h"

namespace qs::formats::detail {

namespace {

using quant::QuantizedLinear;

class Fp8Encoder final : public LinearEncoder {
public:
    std::string_view name() const override { return "fp8"; }

    std::string_view description() const override {
        return "FP8 E4M3, 128x128 block or per-tensor scales (quant_method fp8): vLLM, transformers";
    }

    std::string layoutRefusal(const QuantizedLinear& q) const override {
        if (auto p = fp8CodesProblem(q); !p.empty()) return p;
        if (fp8Blocks128(q) && q.input.format == quant::ActivationFormat::Fp8Tensor)
            return "vLLM's fp8 runs 128x128 block weights with dynamic inputs only; static input scales need "
                   "per-tensor weights";
        if (fp8Blocks128(q) || fp8PerTensor(q)) return "";
        if (fp8PerChannel(q)) return "per-channel FP8 scales need --format ct-fp8-dynamic (vLLM's fp8 has none)";
        return "the fp8 layout stores 128x128 blocks or one scale per tensor, not " + std::to_string(q.blockRows) +
               "x" + std::to_string(q.blockCols) + " blocks";
    }

    bool storesInput(quant::ActivationFormat f) const override {
        return f == quant::ActivationFormat::None || f == quant::ActivationFormat::Fp8Tensor;
    }
    bool storesKvCacheScales() const override { return true; }

    std::vector<EncodedTensor> encode(const std::string& prefix, const QuantizedLinear& q) const override {
        if (auto why = refusal(q); !why.empty()) throw Error(prefix + ": cannot write as fp8: " + why);
        std::vector<EncodedTensor> out;
        out.push_back(fp8WeightTensor(prefix, q));
        if (fp8Blocks128(q))
            out.push_back(matrixTensor(prefix + ".weight_scale_inv", io::DType::F32, {q.scales.rows(), q.scales.cols()},
                                       q.scales));
        else
            out.push_back(matrixTensor(prefix + ".weight_scale", io::DType::F32, {}, q.scales));
        if (q.input.active()) out.push_back(floatTensor(prefix + ".input_scale", io::DType::F32, {}, &q.input.scale));
        for (auto& t : kvCacheScaleTensors(prefix, q, KvScaleNaming::AttentionModule)) out.push_back(std::move(t));
        return out;
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        if (scheme.linears.empty()) throw Error("fp8 export without quantized linears");
        const bool blocks = fp8Blocks128(*scheme.linears.front().second);
        for (const auto& [prefix, q] : scheme.linears)
            if (fp8Blocks128(*q) != blocks)
                throw Error("the fp8 layout has one scale granularity for the whole model, but " + prefix +
                            " differs from " + scheme.linears.front().first);
        const bool staticInputs = commonInputFormat(scheme, name()) == quant::ActivationFormat::Fp8Tensor;
        nlohmann::json config = {
            {"quant_method", "fp8"}, {"activation_scheme", staticInputs ? "static" : "dynamic"}, {"fmt", "e4m3"}};
        if (blocks) config["weight_block_size"] = {128, 128};
        // transformers reads modules_to_not_convert, vLLM ignored_layers (older versions only that).
        if (!scheme.denseLinears.empty()) {
            config["modules_to_not_convert"] = scheme.denseLinears;
            config["ignored_layers"] = scheme.denseLinears;
        }
        return config;
    }
};

}  // namespace

const LinearEncoder& fp8BlockEncoder() {
    static const Fp8Encoder encoder;
    return encoder;
}

}  // namespace qs::formats::detail
