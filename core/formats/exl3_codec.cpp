// EXL3 (exllamav3) checkpoints, docs/formats/exl3.md, read-only. Per linear: `trellis` I16 [K/16, N/16,
// 16*bits], `suh` F16 [K] and `svh` F16 [N] (or the older packed sign bits `su` I16 [K/16], `sv` I16
// [N/16]), an optional `mcg` or `mul1` I32 scalar that selects the codebook, an optional `bias`.
// Upstream: turboderp-org/exllamav3 exllamav3/modules/quant/exl3.py LinearEXL3 (__init__'s checks,
// get_tensors, unpack_bf), conversion/quant_config.py create_quantization_config_json
// (tensor_storage), exl3_lib/quantize.py (the multipliers). The arithmetic is exl3_decode.cpp.
#include <cstring>
#include <sstream>

#include "qs/error.h"
#include "qs/formats/exl3.h"
#include "qs/io/json_file.h"

#include "codecs.h"
#include "quant_config.h"
#include "tensor_access.h"

namespace qs::formats {

namespace {

using detail::failTensor;
using detail::hasTensor;
using detail::requireDtype;
using detail::requireShape;
using detail::requireTensor;

constexpr std::string_view kNeededBy = "an EXL3 linear";

std::string hex(std::uint32_t v) {
    std::ostringstream s;
    s << "0x" << std::hex << std::uppercase << v;
    return s.str();
}

std::vector<std::uint16_t> readU16(const io::TensorView& t) {
    std::vector<std::uint16_t> v(static_cast<std::size_t>(t.numel()));
    std::memcpy(v.data(), t.bytes().data(), std::min(t.bytes().size(), v.size() * 2));  // mmapped data may be unaligned
    return v;
}

struct TrellisShape {
    std::int64_t k = 0, n = 0;
    int bits = 0;
};

TrellisShape readTrellisShape(const io::Checkpoint& ck, const io::TensorView& t) {
    requireDtype(ck, t, {io::DType::I16, io::DType::U16});
    detail::requireRank(ck, t, 3);
    const auto& s = t.shape();
    if (s[2] < 16 || s[2] > 128 || s[2] % 16 != 0)
        failTensor(
            ck, t.name(),
            "shape " + detail::shapeText(s) + ": the last dimension must be 16 * bits for 1 to 8 bits per weight");
    const TrellisShape shape{s[0] * 16, s[1] * 16, static_cast<int>(s[2] / 16)};
    if (shape.k <= 0 || shape.n <= 0 || shape.k % 128 != 0 || shape.n % 128 != 0)
        failTensor(ck, t.name(),
                   "shape " + detail::shapeText(s) + " gives in_features " + std::to_string(shape.k) +
                       " and out_features " + std::to_string(shape.n) +
                       "; EXL3 rotates both sides with Hadamard-128, so both must be multiples of 128");
    return shape;
}

// suh [length] as stored, or the packed sign bits: bit i of word w is the sign of element 16 w + i
// (set = -1), as LinearEXL3.unpack_bf and pack.cu pack_signs_kernel have it.
std::vector<float> readSigns(const io::Checkpoint& ck, const std::string& p, const std::string& unpacked,
                             const std::string& packed, std::int64_t length, bool& wasPacked) {
    if (hasTensor(ck, p + unpacked)) {
        const auto t = ck.tensor(p + unpacked);
        requireDtype(ck, t, {io::DType::F16, io::DType::BF16, io::DType::F32});
        requireShape(ck, t, {length}, "one sign x scale per feature");
        wasPacked = false;
        return t.toF32();
    }
    const auto t = requireTensor(ck, p + packed, "an EXL3 linear without " + p + unpacked);
    requireDtype(ck, t, {io::DType::I16, io::DType::U16});
    requireShape(ck, t, {length / 16}, "16 packed sign bits per word");
    std::vector<float> signs(static_cast<std::size_t>(length));
    const auto words = readU16(t);
    for (std::size_t i = 0; i < signs.size(); ++i) signs[i] = (words[i / 16] >> (i % 16)) & 1u ? -1.0f : 1.0f;
    wasPacked = true;
    return signs;
}

std::uint32_t readMultiplier(const io::Checkpoint& ck, const std::string& name, std::uint32_t expected) {
    const auto t = ck.tensor(name);
    requireDtype(ck, t, {io::DType::I32, io::DType::U32});
    if (!detail::isScalar(t))
        failTensor(ck, name, "shape " + detail::shapeText(t.shape()) + ", expected a single multiplier");
    const std::uint32_t value = detail::readWords(t)[0];
    if (value != expected)
        failTensor(ck, name,
                   "codebook multiplier " + hex(value) + " is not " + hex(expected) +
                       ", the only one exllamav3's kernels decode");
    return value;
}

Exl3Codebook readCodebook(const io::Checkpoint& ck, const std::string& p) {
    const bool mcg = hasTensor(ck, p + ".mcg"), mul1 = hasTensor(ck, p + ".mul1");
    if (mcg && mul1) failTensor(ck, p + ".mul1", "stored beside " + p + ".mcg; a linear has one codebook");
    if (mcg) readMultiplier(ck, p + ".mcg", kExl3McgMultiplier);
    if (mul1) readMultiplier(ck, p + ".mul1", kExl3Mul1Multiplier);
    return mcg ? Exl3Codebook::Mcg : mul1 ? Exl3Codebook::Mul1 : Exl3Codebook::ThreeInst;
}

// quantization_config.json's tensor_storage[prefix] (conversion/quant_config.py) is derived from the
// tensors; when it is there and disagrees with them, the checkpoint is inconsistent.
void checkStorageEntry(const io::Checkpoint& ck, const std::string& p, const nlohmann::json& config,
                       const TrellisShape& shape, Exl3Codebook codebook) {
    const auto storage = config.find("tensor_storage");
    if (storage == config.end() || !storage->is_object()) return;
    const auto entry = storage->find(p);
    if (entry == storage->end() || !entry->is_object()) return;
    const std::string trellis = p + ".trellis";
    if (const int bits = detail::jsonInt(*entry, "bits_per_weight", shape.bits, {1, 16}, "tensor_storage." + p);
        bits != shape.bits)
        failTensor(ck, trellis,
                   "tensor_storage says bits_per_weight " + std::to_string(bits) + ", the shape gives " +
                       std::to_string(shape.bits));
    const auto named = [&](const char* key) {
        return entry->contains(key) && (*entry)[key].is_number() && (*entry)[key].get<double>() != 0.0;
    };
    const Exl3Codebook listed = named("mcg_multiplier")    ? Exl3Codebook::Mcg
                                : named("mul1_multiplier") ? Exl3Codebook::Mul1
                                                           : Exl3Codebook::ThreeInst;
    if (listed != codebook)
        failTensor(ck, trellis,
                   "tensor_storage names the " + std::string(exl3CodebookName(listed)) + " codebook, the tensors the " +
                       std::string(exl3CodebookName(codebook)) + " codebook");
}

// Everything but the trellis words: what describe() checks and decode() needs.
Exl3Linear readHeader(const io::Checkpoint& ck, const std::string& p, const nlohmann::json& config) {
    const auto trellis = requireTensor(ck, p + ".trellis", kNeededBy);
    const TrellisShape shape = readTrellisShape(ck, trellis);
    Exl3Linear l;
    l.inFeatures = shape.k;
    l.outFeatures = shape.n;
    l.bits = shape.bits;
    l.codebook = readCodebook(ck, p);
    checkStorageEntry(ck, p, config, shape, l.codebook);
    bool packedU = false, packedV = false;
    l.suh = readSigns(ck, p, ".suh", ".su", shape.k, packedU);
    l.svh = readSigns(ck, p, ".svh", ".sv", shape.n, packedV);
    l.packedSigns = packedU || packedV;
    return l;
}

class Exl3Codec final : public LinearCodec {
public:
    std::string_view name() const override { return "exl3"; }

    std::vector<LinearRef> linears(const io::Checkpoint& ck) const override {
        return detail::refsWithSuffix(ck, ".trellis",
                                      [](const io::CheckpointTensor& t) { return t.info->shape.size() == 3; });
    }

    LayerQuantInfo describe(const io::Checkpoint& ck, const nlohmann::json& config,
                            const LinearRef& ref) const override {
        detail::requireUnstacked(ck, ref, name());
        const Exl3Linear l = readHeader(ck, ref.prefix, config);
        LayerQuantInfo info;
        info.ref = ref;
        info.codec = "exl3";
        info.scheme = "exl3";
        info.bits = l.bits;
        info.groupSize = -1;  // no group scales: 16x16 tiles of codebook values, suh/svh per channel
        info.granularity = "channel";
        info.rows = l.outFeatures;
        info.cols = l.inFeatures;
        return info;
    }

    DecodedLinear decode(const io::Checkpoint& ck, const nlohmann::json& config, const LinearRef& ref) const override {
        detail::requireUnstacked(ck, ref, name());
        const Exl3Linear l = readExl3Linear(ck, ref.prefix, config);
        DecodedLinear d;
        d.ref = ref;
        d.quantized = true;
        d.weight = exl3Dequantize(l);
        // Tiles, codebook and two-sided rotation have no QuantizedLinear form: readExl3Linear gives the parts.
        d.partsExact = false;
        d.parts.rows = l.outFeatures;
        d.parts.cols = l.inFeatures;
        d.parts.bits = l.bits;
        d.bias = detail::readBias(ck, ref, l.outFeatures);
        return d;
    }
};

}  // namespace

Exl3Linear readExl3Linear(const io::Checkpoint& ck, std::string_view prefix, const nlohmann::json& quantConfig) {
    const std::string p(prefix);
    Exl3Linear l = readHeader(ck, p, quantConfig);
    const auto trellis = ck.tensor(p + ".trellis");
    l.trellis = readU16(trellis);
    return l;
}

namespace detail {

const LinearCodec& exl3Codec() {
    static const Exl3Codec codec;
    return codec;
}

bool looksLikeExl3(const io::Checkpoint& ck) {
    for (const auto& t : ck.tensors()) {
        const std::string& name = t.info->name;
        if (!name.ends_with(".trellis") || t.info->shape.size() != 3) continue;
        const std::string p = name.substr(0, name.size() - 8);
        if (hasTensor(ck, p + ".suh") || hasTensor(ck, p + ".su")) return true;
    }
    return false;
}

void addExl3TensorStorage(const io::Checkpoint& ck, nlohmann::json& config) {
    const auto path = ck.root() / "quantization_config.json";
    if (!std::filesystem::exists(path)) return;
    const auto file = io::readJsonFile(path);
    if (!file.is_object()) return;
    if (config.empty() && lowerCase(jsonString(file, "quant_method", "")) == "exl3") {
        config = file;  // a config.json without quantization_config: the second file has the same keys
        return;
    }
    if (!config.contains("tensor_storage") && file.contains("tensor_storage"))
        config["tensor_storage"] = file["tensor_storage"];
}

}  // namespace detail

}  // namespace qs::formats
