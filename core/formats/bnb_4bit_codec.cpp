// bitsandbytes 4-bit (NF4 / FP4) as transformers serialises Linear4bit, docs/formats/bitsandbytes.md:
//   <p>.weight U8 [ceil(N*K/2), 1]: the row-major flattened codes, FIRST element in the HIGH nibble
//   <p>.weight.absmax F32 [nblocks] (U8 codes when double-quantised), <p>.weight.quant_map F32 [16]
//   <p>.weight.nested_absmax F32, <p>.weight.nested_quant_map F32 [256] (double quantisation only)
//   <p>.weight.quant_state.bitsandbytes__nf4|fp4 U8: JSON {quant_type, blocksize, dtype, shape,
//        nested_blocksize, nested_offset}
//   w[i] = quant_map[code(i)] * absmax[i / blocksize], with double quantisation
//   absmax[b] = nested_quant_map[absmax_code[b]] * nested_absmax[b / nested_blocksize] + nested_offset.
// The stored quant_map is used, not a built-in table.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "qs/error.h"
#include "qs/io/json_file.h"
#include "qs/io/json_value.h"

#include "codecs.h"
#include "quant_config.h"
#include "tensor_access.h"

namespace qs::formats::detail {

namespace {

constexpr std::array<float, 16> kNf4 = {-1.0f,
                                        -0.6961928009986877f,
                                        -0.5250730514526367f,
                                        -0.39491748809814453f,
                                        -0.28444138169288635f,
                                        -0.18477343022823334f,
                                        -0.09105003625154495f,
                                        0.0f,
                                        0.07958029955625534f,
                                        0.16093020141124725f,
                                        0.24611230194568634f,
                                        0.33791524171829224f,
                                        0.44070982933044434f,
                                        0.5626170039176941f,
                                        0.7229568362236023f,
                                        1.0f};
// bitsandbytes' "fp4" map is [0, .0625, 8, 12, 4, 6, 2, 3, -0, ...] / 12: magnitude codes 2..7 are
// E2M1 codes 6, 7, 4, 5, 2, 3 scaled by absmax / 6; code 1 (0.0625 / 12) has no E2M1 counterpart.
constexpr std::array<float, 8> kBnbFp4Times12 = {0.0f, 0.0625f, 8.0f, 12.0f, 4.0f, 6.0f, 2.0f, 3.0f};
constexpr std::array<std::uint8_t, 8> kBnbFp4ToE2m1 = {0, 0, 6, 7, 4, 5, 2, 3};

constexpr std::string_view kStatePrefix = ".weight.quant_state.bitsandbytes__";

struct QuantState {
    std::string type;  // "nf4" | "fp4"
    std::int64_t blockSize = 64;
    std::int64_t rows = 0, cols = 0;
    bool nested = false;
    std::int64_t nestedBlockSize = 256;
    float nestedOffset = 0.0f;
};

std::string stateTensorName(const io::Checkpoint& ck, const std::string& p) {
    for (const char* type : {"nf4", "fp4"})
        if (const auto name = p + std::string(kStatePrefix) + type; hasTensor(ck, name)) return name;
    throw Error(ck.root().string() + ": " + p + " has no " + p + std::string(kStatePrefix) + "nf4|fp4 tensor");
}

// The quant_state blob: JSON that transformers' Params4bit wrote. Every value it promises is
// required: a missing nested_offset is not 0 (the KL of an NF4 model read so was 0.93, not 0.0063).
QuantState readState(const io::Checkpoint& ck, const std::string& p) {
    const auto t = ck.tensor(stateTensorName(ck, p));
    requireDtype(ck, t, {io::DType::U8});
    const std::string where = tensorWhere(ck, t.name());
    const nlohmann::json j = io::parseJson(
        std::string_view(reinterpret_cast<const char*>(t.bytes().data()), t.bytes().size()), where + ": quant_state");
    if (!j.is_object()) failTensor(ck, t.name(), "quant_state is " + io::jsonKind(j) + ", expected a JSON object");
    QuantState s;
    s.type = lowerCase(jsonString(j, "quant_type", "", "quant_state"));
    if (s.type != "nf4" && s.type != "fp4")
        failTensor(ck, t.name(), "quant_type '" + s.type + "', expected nf4 or fp4");
    constexpr io::IntRange kBlock{1, 1 << 30}, kDim{1, std::numeric_limits<std::int32_t>::max()};
    s.blockSize = io::jsonIntegerField(j, "blocksize", where, kBlock).value_or(64);
    const auto shape = j.find("shape");
    if (shape == j.end() || !shape->is_array() || shape->size() != 2)
        failTensor(ck, t.name(), "has no 2-D 'shape' (a 4-bit linear weight is [out, in])");
    s.rows = io::jsonInteger((*shape)[0], where + ": 'shape'[0]", kDim);
    s.cols = io::jsonInteger((*shape)[1], where + ": 'shape'[1]", kDim);
    s.nested =
        j.contains("nested_offset") || j.contains("nested_blocksize") || hasTensor(ck, p + ".weight.nested_absmax");
    if (!s.nested) return s;
    s.nestedBlockSize = io::jsonIntegerField(j, "nested_blocksize", where, kBlock).value_or(256);
    const auto offset = j.find("nested_offset");
    if (offset == j.end() || !offset->is_number() || !std::isfinite(offset->get<double>()))
        failTensor(ck, t.name(),
                   "quant_state of a double-quantised weight needs a finite 'nested_offset' (the mean added back "
                   "to every absmax), but it is " +
                       (offset == j.end() ? std::string("missing") : offset->dump()));
    s.nestedOffset = offset->get<float>();
    return s;
}

struct Absmax {
    std::vector<float> values;        // dequantized, one per block
    std::vector<std::uint8_t> codes;  // double quantisation only
    std::vector<float> nestedScales;
};

Absmax readAbsmax(const io::Checkpoint& ck, const std::string& p, const QuantState& s, std::int64_t blocks) {
    const auto absmax = requireTensor(ck, p + ".weight.absmax", "bitsandbytes 4-bit");
    requireShape(ck, absmax, {blocks}, "one absmax per block of " + std::to_string(s.blockSize) + " weights");
    Absmax a;
    if (!s.nested) {
        requireDtype(ck, absmax, {io::DType::F32, io::DType::F16, io::DType::BF16});
        a.values = absmax.toF32();
        return a;
    }
    requireDtype(ck, absmax, {io::DType::U8});
    const auto nestedAbsmax = requireTensor(ck, p + ".weight.nested_absmax", "double quantisation");
    requireDtype(ck, nestedAbsmax, {io::DType::F32, io::DType::F16, io::DType::BF16});
    requireShape(ck, nestedAbsmax, {ceilDiv(blocks, s.nestedBlockSize)},
                 "one scale per " + std::to_string(s.nestedBlockSize) + " absmax codes");
    const auto nestedMap = requireTensor(ck, p + ".weight.nested_quant_map", "double quantisation");
    requireDtype(ck, nestedMap, {io::DType::F32, io::DType::F16, io::DType::BF16});
    requireShape(ck, nestedMap, {256}, "the 8-bit dynamic map");
    const auto map = nestedMap.toF32();
    a.nestedScales = nestedAbsmax.toF32();
    const std::uint8_t* codes = bytePointer(absmax);
    a.codes.assign(codes, codes + blocks);
    a.values.resize(static_cast<std::size_t>(blocks));
    for (std::int64_t b = 0; b < blocks; ++b)
        a.values[static_cast<std::size_t>(b)] =
            map[codes[b]] * a.nestedScales[static_cast<std::size_t>(b / s.nestedBlockSize)] + s.nestedOffset;
    return a;
}

bool sameTable(const std::vector<float>& stored, const auto& expected, float divisor) {
    for (std::size_t i = 0; i < stored.size(); ++i)
        if (std::abs(stored[i] - (i < 8 ? 1.0f : -1.0f) * expected[i % 8] / divisor) > 1e-6f) return false;
    return true;
}

// QuantizedLinear holds NF4 codes directly and bitsandbytes FP4 as E2M1 over absmax / 6; parts are
// exact only for rows made of whole blocks and the standard tables.
void fillParts(DecodedLinear& d, const QuantState& s, const std::vector<float>& map, Absmax&& a) {
    const bool nf4 = s.type == "nf4";
    const int blockSize = static_cast<int>(s.blockSize);
    auto& q = d.parts;
    std::vector<std::uint8_t> codes = std::move(q.codes);
    // Method Nf4 for bitsandbytes' whole 4-bit family; FP4 is told apart by its code kind.
    q = nf4 ? quant::QuantizedLinear::nf4(s.rows, s.cols, blockSize)
            : quant::QuantizedLinear::fp4(quant::Method::Nf4, s.rows, s.cols, blockSize);
    if (s.cols % s.blockSize != 0) {  // blocks straddle rows: no per-row scale grid exists
        d.partsExact = false;
        return;
    }
    q.codes = std::move(codes);
    d.partsExact =
        nf4 ? std::equal(map.begin(), map.end(), kNf4.begin(), [](float x, float y) { return std::abs(x - y) < 1e-6f; })
            : sameTable(map, kBnbFp4Times12, 12.0f);
    if (!nf4)
        for (auto& c : q.codes) {
            d.partsExact = d.partsExact && (c & 7) != 1;
            c = static_cast<std::uint8_t>((c & 8) | kBnbFp4ToE2m1[c & 7]);
        }
    q.scales = Eigen::Map<const MatrixF>(a.values.data(), s.rows, s.cols / s.blockSize);
    if (!nf4) q.scales /= 6.0f;
    q.scaleCodes = std::move(a.codes);
    q.scaleScales = std::move(a.nestedScales);
    q.scaleOffset = s.nested ? s.nestedOffset : 0.0f;
}

class Bnb4BitCodec final : public LinearCodec {
public:
    std::string_view name() const override { return "bnb-4bit"; }

    std::vector<LinearRef> linears(const io::Checkpoint& ck) const override {
        auto refs = refsWithSuffix(ck, std::string(kStatePrefix) + "nf4");
        for (auto& r : refsWithSuffix(ck, std::string(kStatePrefix) + "fp4")) refs.push_back(std::move(r));
        std::sort(refs.begin(), refs.end(), [](const LinearRef& a, const LinearRef& b) { return a.prefix < b.prefix; });
        return refs;
    }

    LayerQuantInfo describe(const io::Checkpoint& ck, const nlohmann::json&, const LinearRef& ref) const override {
        requireUnstacked(ck, ref, name());
        const auto s = readState(ck, ref.prefix);
        LayerQuantInfo info;
        info.ref = ref;
        info.codec = "bitsandbytes";
        info.scheme = s.type;
        info.bits = 4;
        info.groupSize = static_cast<int>(s.blockSize);
        info.granularity = "group";
        info.rows = s.rows;
        info.cols = s.cols;
        return info;
    }

    DecodedLinear decode(const io::Checkpoint& ck, const nlohmann::json&, const LinearRef& ref) const override {
        requireUnstacked(ck, ref, name());
        const auto s = readState(ck, ref.prefix);
        const std::int64_t count = s.rows * s.cols, blocks = ceilDiv(count, s.blockSize);
        const auto weight = requireTensor(ck, ref.prefix + ".weight", "bitsandbytes 4-bit");
        requireDtype(ck, weight, {io::DType::U8});
        if (weight.numel() != ceilDiv(count, 2))
            failTensor(ck, weight.name(),
                       "shape " + shapeText(weight.shape()) + " holds " + std::to_string(weight.numel()) +
                           " bytes, expected " + std::to_string(ceilDiv(count, 2)) + " for a [" +
                           std::to_string(s.rows) + ", " + std::to_string(s.cols) + "] weight");
        const auto mapTensor = requireTensor(ck, ref.prefix + ".weight.quant_map", "bitsandbytes 4-bit");
        requireDtype(ck, mapTensor, {io::DType::F32, io::DType::F16, io::DType::BF16});
        requireShape(ck, mapTensor, {16}, "a 16-entry codebook");
        const auto map = mapTensor.toF32();
        auto absmax = readAbsmax(ck, ref.prefix, s, blocks);

        DecodedLinear d;
        d.ref = ref;
        d.quantized = true;
        d.weight.resize(s.rows, s.cols);
        const std::uint8_t* packed = bytePointer(weight);
        auto& codes = d.parts.codes;
        codes.resize(static_cast<std::size_t>(count));
        for (std::int64_t i = 0; i < count; ++i) {
            const std::uint8_t code = (i % 2 == 0) ? (packed[i / 2] >> 4) : (packed[i / 2] & 0x0F);
            codes[static_cast<std::size_t>(i)] = code;
            d.weight.data()[i] = map[code] * absmax.values[static_cast<std::size_t>(i / s.blockSize)];
        }
        fillParts(d, s, map, std::move(absmax));
        d.bias = readBias(ck, ref, s.rows);
        return d;
    }
};

}  // namespace

const LinearCodec& bnb4BitCodec() {
    static const Bnb4BitCodec codec;
    return codec;
}

}  // namespace qs::formats::detail
