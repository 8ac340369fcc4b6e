// gpt-oss MXFP4 experts, docs/formats/gpt-oss-mxfp4.md: per layer, stacked over E experts,
//   <p>_blocks U8 [E, N, K/32, 16]  (16 bytes per 32-input block, element 2b in the low nibble of byte b)
//   <p>_scales U8 [E, N, K/32]      (E8M0 exponents, bias 127)
//   <p>_bias   [E, N]
// with <p> = model.layers.L.mlp.experts.gate_up_proj | down_proj (original checkpoints: ".blocks" /
// ".scales" / "_bias" after block.L.mlp.mlp1_weight). W_e[n, k] = e2m1(code) * 2^(scale - 127).
// gate_up rows interleave gate and up (row 2i gate_i, row 2i+1 up_i); rows are kept as stored.
#include <algorithm>

#include "qs/error.h"

#include "codecs.h"
#include "fp4_weight.h"
#include "tensor_access.h"

namespace qs::formats::detail {

namespace {

struct Naming {
    std::string_view blocks, scales;
};
constexpr Naming kHfNaming{"_blocks", "_scales"};
constexpr Naming kOriginalNaming{".blocks", ".scales"};

Naming namingOf(const io::Checkpoint& ck, const std::string& prefix) {
    return hasTensor(ck, prefix + std::string(kHfNaming.blocks)) ? kHfNaming : kOriginalNaming;
}

struct ExpertTensors {
    io::TensorView blocks, scales;
    std::int64_t experts = 0, rows = 0, cols = 0;
};

ExpertTensors open(const io::Checkpoint& ck, const LinearRef& ref) {
    const auto naming = namingOf(ck, ref.prefix);
    const auto blocks = requireTensor(ck, ref.prefix + std::string(naming.blocks), "gpt-oss MXFP4");
    requireDtype(ck, blocks, {io::DType::U8});
    const auto& s = blocks.shape();
    // Rank 4 is stacked by expert; rank 3 is one linear.
    if ((s.size() != 4 && s.size() != 3) || s.back() != 16)
        failTensor(ck, blocks.name(),
                   "shape " + shapeText(s) + ", expected [experts, out, in/32, 16] or [out, in/32, 16]");
    const bool stacked = s.size() == 4;
    ExpertTensors t{blocks, requireTensor(ck, ref.prefix + std::string(naming.scales), "gpt-oss MXFP4"),
                    stacked ? s[0] : 1, s[s.size() - 3], s[s.size() - 2] * 32};
    requireDtype(ck, t.scales, {io::DType::U8, io::DType::F8_E8M0});
    std::vector<std::int64_t> scaleShape(s.begin(), s.end() - 1);
    requireShape(ck, t.scales, scaleShape, "one scale per 32-input block of " + blocks.name());
    if (stacked && (ref.expert < 0 || ref.expert >= t.experts))
        throw Error(tensorWhere(ck, blocks.name()) + ": expert " + std::to_string(ref.expert) + " outside 0.." +
                    std::to_string(t.experts - 1));
    if (!stacked && ref.expert >= 0) requireUnstacked(ck, ref, "unstacked MXFP4");
    return t;
}

std::vector<float> expertBias(const io::Checkpoint& ck, const LinearRef& ref, const ExpertTensors& t) {
    // HF names "<p>_bias"; original checkpoints "mlp1_bias" beside "mlp1_weight.blocks".
    std::string name = ref.prefix + "_bias";
    if (!hasTensor(ck, name) && ref.prefix.ends_with("_weight"))
        name = ref.prefix.substr(0, ref.prefix.size() - 7) + "_bias";
    if (!hasTensor(ck, name)) return {};
    const auto bias = ck.tensor(name);
    const bool stacked = t.blocks.shape().size() == 4;
    requireShape(ck, bias, stacked ? std::vector<std::int64_t>{t.experts, t.rows} : std::vector<std::int64_t>{t.rows},
                 "one bias per expert and output");
    const auto all = bias.toF32();
    const auto first = all.begin() + (stacked ? ref.expert : 0) * t.rows;
    return {first, first + t.rows};
}

class GptOssMxfp4Codec final : public LinearCodec {
public:
    std::string_view name() const override { return "mxfp4"; }

    std::vector<LinearRef> linears(const io::Checkpoint& ck) const override {
        std::vector<LinearRef> refs;
        for (const auto naming : {kHfNaming, kOriginalNaming})
            for (const auto& r : refsWithSuffix(ck, naming.blocks)) {
                const auto* t = ck.find(r.prefix + std::string(naming.blocks));
                if (t->info->shape.size() == 4)
                    for (std::int64_t e = 0; e < t->info->shape[0]; ++e)
                        refs.push_back({r.prefix, static_cast<int>(e)});
                else
                    refs.push_back(r);
            }
        return refs;
    }

    LayerQuantInfo describe(const io::Checkpoint& ck, const nlohmann::json&, const LinearRef& ref) const override {
        const auto t = open(ck, ref);
        LayerQuantInfo info;
        info.ref = ref;
        info.codec = "mxfp4";
        info.scheme = "mxfp4";
        info.bits = 4;
        info.groupSize = 32;
        info.granularity = "group";
        info.rows = t.rows;
        info.cols = t.cols;
        return info;
    }

    DecodedLinear decode(const io::Checkpoint& ck, const nlohmann::json&, const LinearRef& ref) const override {
        const auto t = open(ck, ref);
        const std::int64_t e = std::max(ref.expert, 0);
        const std::int64_t blocksPerRow = t.cols / 32;
        Fp4Blocks b;
        b.packed = bytePointer(t.blocks) + e * t.rows * blocksPerRow * 16;  // [N, K/32, 16] is [N, K/2]
        b.rows = t.rows;
        b.cols = t.cols;
        b.blockSize = 32;
        b.storedScales.resize(t.rows, blocksPerRow);
        const std::uint8_t* s = bytePointer(t.scales) + e * t.rows * blocksPerRow;
        for (Eigen::Index i = 0; i < b.storedScales.size(); ++i) b.storedScales.data()[i] = io::e8m0ToF32(s[i]);
        b.method = quant::Method::Mxfp4;
        auto d = decodeFp4Blocks(ref, b);
        d.bias = expertBias(ck, ref, t);
        return d;
    }
};

}  // namespace

const LinearCodec& gptOssMxfp4Codec() {
    static const GptOssMxfp4Codec codec;
    return codec;
}

}  // namespace qs::formats::detail
