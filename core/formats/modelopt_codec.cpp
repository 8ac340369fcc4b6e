// NVIDIA ModelOpt (TensorRT-Model-Optimizer) exports, docs/formats/modelopt.md:
//   NVFP4  weight U8 [N, K/2] (even element in the low nibble), weight_scale F8_E4M3 [N, K/16],
//          weight_scale_2 F32 scalar (a MULTIPLIER): W = e2m1 * (weight_scale * weight_scale_2)
//   FP8    weight F8_E4M3 [N, K], weight_scale F32 scalar (per channel for FP8_PER_CHANNEL_PER_TOKEN,
//          128x128 blocks for FP8_PB_WO): W = fp8 * weight_scale
// MIXED_PRECISION names each layer's algorithm in quantized_layers.
#include <cctype>
#include <cmath>

#include "qs/error.h"

#include "codecs.h"
#include "fp4_weight.h"
#include "fp8_weight.h"
#include "quant_config.h"
#include "tensor_access.h"

namespace qs::formats::detail {

namespace {

struct ModelOptScheme {
    std::string algo;  // upper case: NVFP4, FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, ...
    int groupSize = 16;
};

std::string upperCase(std::string s) {
    for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
}

constexpr io::IntRange kGroupRange{1, 1 << 20};

int groupSizeOf(const nlohmann::json& config) {
    if (config.contains("group_size")) return jsonInt(config, "group_size", 16, kGroupRange);
    // config.json form: only config_groups.*.weights.group_size says it.
    if (const auto groups = config.find("config_groups"); groups != config.end() && groups->is_object())
        for (const auto& [name, g] : groups->items())
            if (g.is_object() && g.contains("weights") && g["weights"].is_object())
                return jsonInt(g["weights"], "group_size", 16, kGroupRange, "config_groups." + name + ".weights");
    return 16;
}

ModelOptScheme schemeFor(const nlohmann::json& config, const std::string& module) {
    ModelOptScheme s{upperCase(jsonString(config, "quant_algo", "")), groupSizeOf(config)};
    if (s.algo == "MIXED_PRECISION") {
        const auto layers = config.find("quantized_layers");
        const auto it = layers != config.end() && layers->is_object() ? layers->find(module) : config.end();
        if (layers == config.end() || it == layers->end())
            throw ConfigError("quant_algo MIXED_PRECISION but 'quantized_layers' does not list " + module);
        s.algo = upperCase(jsonString(*it, "quant_algo", "", "quantized_layers." + module));
        s.groupSize = jsonInt(*it, "group_size", s.groupSize, kGroupRange, "quantized_layers." + module);
    }
    return s;
}

bool isNvfp4(const std::string& algo) { return algo == "NVFP4" || algo == "W4A16_NVFP4"; }
bool isFp8(const std::string& algo) { return algo.starts_with("FP8"); }

Fp4Blocks openNvfp4(const io::Checkpoint& ck, const std::string& p, int groupSize) {
    const auto w = requireTensor(ck, p + ".weight", "ModelOpt NVFP4");
    requireDtype(ck, w, {io::DType::U8});
    requireRank(ck, w, 2);
    const std::int64_t rows = w.shape()[0], cols = w.shape()[1] * 2;
    if (groupSize <= 0 || cols % groupSize != 0)
        failTensor(ck, w.name(),
                   std::to_string(cols) + " inputs are not a multiple of the group size " + std::to_string(groupSize));
    const auto scale = requireTensor(ck, p + ".weight_scale", "ModelOpt NVFP4");
    requireDtype(ck, scale, {io::DType::F8_E4M3});
    requireShape(ck, scale, {rows, cols / groupSize},
                 "one scale per " + std::to_string(groupSize) + " inputs of weight " + shapeText(w.shape()));
    const auto scale2 = requireTensor(ck, p + ".weight_scale_2", "ModelOpt NVFP4");
    requireDtype(ck, scale2, {io::DType::F32, io::DType::F16, io::DType::BF16});
    if (!isScalar(scale2)) failTensor(ck, scale2.name(), "shape " + shapeText(scale2.shape()) + ", expected one value");
    Fp4Blocks b;
    b.packed = bytePointer(w);
    b.rows = rows;
    b.cols = cols;
    b.blockSize = groupSize;
    b.storedScales = scale.toMatrix();
    b.globalScale = scale2.toF32()[0];
    if (!std::isfinite(b.globalScale))
        failTensor(ck, scale2.name(),
                   "is " + std::to_string(b.globalScale) + ", but the second-level scale must be finite");
    b.method = quant::Method::Nvfp4;
    return b;
}

ScaleGrid openFp8Scales(const io::Checkpoint& ck, const std::string& p, const ModelOptScheme& s,
                        const io::TensorView& w) {
    ScaleHint hint;
    if (s.algo == "FP8_PB_WO") hint.block = std::pair{128, 128};
    return readScaleGrid(ck, requireTensor(ck, p + ".weight_scale", "ModelOpt FP8"), w.shape()[0], w.shape()[1], hint);
}

void requireReadable(const std::string& module, const ModelOptScheme& s) {
    if (!isNvfp4(s.algo) && !isFp8(s.algo))
        throw ConfigError("quant_algo '" + s.algo + "' of " + module + " is not readable (NVFP4 and FP8 variants are)");
}

class ModelOptCodec final : public LinearCodec {
public:
    std::string_view name() const override { return "modelopt"; }

    std::vector<LinearRef> linears(const io::Checkpoint& ck) const override {
        return refsWithSuffix(ck, ".weight", [&ck](const io::CheckpointTensor& t) {
            const auto& n = t.info->name;
            return (t.info->dtype == io::DType::U8 || t.info->dtype == io::DType::F8_E4M3) &&
                   hasTensor(ck, n.substr(0, n.size() - 7) + ".weight_scale");
        });
    }

    LayerQuantInfo describe(const io::Checkpoint& ck, const nlohmann::json& config,
                            const LinearRef& ref) const override {
        requireUnstacked(ck, ref, name());
        const auto s = schemeFor(config, ref.prefix);
        requireReadable(ref.prefix, s);
        if (isNvfp4(s.algo)) {
            const auto b = openNvfp4(ck, ref.prefix, s.groupSize);
            LayerQuantInfo info;
            info.ref = ref;
            info.codec = "modelopt";
            info.scheme = "nvfp4";
            info.bits = 4;
            info.groupSize = s.groupSize;
            info.granularity = "group";
            info.rows = b.rows;
            info.cols = b.cols;
            return info;
        }
        const auto w = requireTensor(ck, ref.prefix + ".weight", "ModelOpt FP8");
        requireFp8Weight(ck, w);
        return describeScaledFp8(ref, "modelopt", w.shape()[0], w.shape()[1], openFp8Scales(ck, ref.prefix, s, w));
    }

    DecodedLinear decode(const io::Checkpoint& ck, const nlohmann::json& config, const LinearRef& ref) const override {
        requireUnstacked(ck, ref, name());
        const auto s = schemeFor(config, ref.prefix);
        requireReadable(ref.prefix, s);
        if (isNvfp4(s.algo)) {
            auto d = decodeFp4Blocks(ref, openNvfp4(ck, ref.prefix, s.groupSize));
            d.bias = readBias(ck, ref, d.weight.rows());
            return d;
        }
        const auto w = requireTensor(ck, ref.prefix + ".weight", "ModelOpt FP8");
        requireFp8Weight(ck, w);
        return decodeScaledFp8(ck, ref, w, openFp8Scales(ck, ref.prefix, s, w));
    }
};

}  // namespace

const LinearCodec& modelOptCodec() {
    static const ModelOptCodec codec;
    return codec;
}

}  // namespace qs::formats::detail
