// FP8 (`quant_method: "fp8"`), docs/formats/fp8.md: `weight` F8_E4M3 [N, K] with either
//   weight_scale_inv F32 (or F8_E8M0 with scale_fmt "ue8m0") [ceil(N/bn), ceil(K/bk)]   (blocks), or
//   weight_scale F32 [] / [1] (per tensor; input_scale beside it for static activations) or [N] / [N, 1].
// Both scale names are dequantization multipliers.
#include "qs/error.h"

#include "codecs.h"
#include "fp8_weight.h"
#include "quant_config.h"
#include "tensor_access.h"

namespace qs::formats::detail {

namespace {

bool isFp8Weight(const io::CheckpointTensor& t) { return t.info->dtype == io::DType::F8_E4M3; }

ScaleHint hintFrom(const nlohmann::json& config) {
    ScaleHint hint;
    const auto it = config.find("weight_block_size");
    if (it == config.end() || it->is_null()) return hint;
    if (!it->is_array() || it->size() != 2)
        throw ConfigError("'weight_block_size' is " + it->dump() + ", expected two integers [rows, cols]");
    try {
        const io::IntRange positive{1, 1 << 20};
        hint.block = std::pair{static_cast<int>(io::jsonInteger((*it)[0], "'weight_block_size'[0]", positive)),
                               static_cast<int>(io::jsonInteger((*it)[1], "'weight_block_size'[1]", positive))};
    } catch (const Error& e) {
        throw ConfigError(e.what());
    }
    return hint;
}

struct Fp8Tensors {
    io::TensorView weight;
    ScaleGrid grid;
};

Fp8Tensors open(const io::Checkpoint& ck, const nlohmann::json& config, const LinearRef& ref) {
    requireUnstacked(ck, ref, "fp8");
    const auto weight = requireTensor(ck, ref.prefix + ".weight", "FP8");
    requireFp8Weight(ck, weight);
    const bool inv = hasTensor(ck, ref.prefix + ".weight_scale_inv");
    const auto scale = requireTensor(ck, ref.prefix + (inv ? ".weight_scale_inv" : ".weight_scale"), "an FP8 weight");
    // Block shapes only come with weight_scale_inv; a block size without it keeps [128, 128] (DeepSeek-V3).
    ScaleHint hint = hintFrom(config);
    if (inv && !hint.block && !isScalar(scale)) hint.block = std::pair{128, 128};
    return {weight, readScaleGrid(ck, scale, weight.shape()[0], weight.shape()[1], hint)};
}

class Fp8Codec final : public LinearCodec {
public:
    std::string_view name() const override { return "fp8"; }

    std::vector<LinearRef> linears(const io::Checkpoint& checkpoint) const override {
        return refsWithSuffix(checkpoint, ".weight", isFp8Weight);
    }

    LayerQuantInfo describe(const io::Checkpoint& ck, const nlohmann::json& config,
                            const LinearRef& ref) const override {
        const auto t = open(ck, config, ref);
        return describeScaledFp8(ref, "fp8", t.weight.shape()[0], t.weight.shape()[1], t.grid);
    }

    DecodedLinear decode(const io::Checkpoint& ck, const nlohmann::json& config, const LinearRef& ref) const override {
        auto t = open(ck, config, ref);
        return decodeScaledFp8(ck, ref, t.weight, std::move(t.grid));
    }
};

}  // namespace

const LinearCodec& fp8Codec() {
    static const Fp8Codec codec;
    return codec;
}

}  // namespace qs::formats::detail
