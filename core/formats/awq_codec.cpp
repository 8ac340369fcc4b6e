// AWQ (AutoAWQ), 4-bit, docs/formats/awq.md.
//   gemm: qweight I32 [K, N/8] packed along N; nibble slot i of the word covering columns 8c..8c+7
//         holds column 8c + AWQ_ORDER[i], AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]; qzeros [K/G, N/8]
//         packed the same way; scales [K/G, N].
//   gemv: qweight I32 [N, K/8] packed along K in plain order; qzeros [N, Z] (groups, 8 per word);
//         scales [N, Z*8]; entries past the last group are padding.
//   W[n, k] = (q - z) * s with raw zeros (no -1, unlike GPTQ v1).
#include <array>
#include <limits>

#include "qs/error.h"

#include "bit_fields.h"
#include "codecs.h"
#include "quant_config.h"
#include "tensor_access.h"

namespace qs::formats::detail {

namespace {

// Slot that holds logical column j of a word (the inverse of AWQ_ORDER).
constexpr std::array<int, 8> kAwqSlotOfColumn = {0, 4, 1, 5, 2, 6, 3, 7};

std::uint32_t nibble(std::uint32_t word, int slot) { return (word >> (4 * slot)) & 0xFu; }

struct AwqScheme {
    bool gemv = false;
    int groupSize = 128;
};

AwqScheme schemeFor(const nlohmann::json& config, const std::string& module) {
    constexpr io::IntRange kBits{1, 32}, kGroup{-1, std::numeric_limits<std::int32_t>::max()};
    const int bits = jsonInt(config, "bits", jsonInt(config, "w_bit", 4, kBits), kBits);
    if (bits != 4) throw ConfigError("bits " + std::to_string(bits) + " for " + module + " (only 4-bit AWQ exists)");
    const auto version = lowerCase(jsonString(config, "version", "gemm"));
    if (version != "gemm" && version != "gemv")
        throw ConfigError("'version' is '" + version + "', not readable (gemm and gemv are)");
    return {version == "gemv", jsonInt(config, "group_size", jsonInt(config, "q_group_size", 128, kGroup), kGroup)};
}

struct AwqLayer {
    std::int64_t rows = 0, cols = 0, groupSize = 0, groups = 0;
    MatrixF scales, zeros;            // [rows, groups]
    std::vector<std::uint8_t> codes;  // [rows * cols]
};

std::int64_t groupSizeFor(const AwqScheme& s, std::int64_t k, const std::string& module) {
    const std::int64_t g = s.groupSize == -1 ? k : s.groupSize;
    if (g <= 0 || k % g != 0)
        throw Error(module + ": AWQ group size " + std::to_string(s.groupSize) + " does not divide " +
                    std::to_string(k) + " inputs");
    return g;
}

AwqLayer readGemm(const io::Checkpoint& ck, const std::string& p, const AwqScheme& s, bool unpack) {
    const auto qweight = requireTensor(ck, p + ".qweight", "AWQ");
    requireDtype(ck, qweight, {io::DType::I32, io::DType::U32});
    requireRank(ck, qweight, 2);
    AwqLayer l;
    l.cols = qweight.shape()[0];
    l.rows = qweight.shape()[1] * 8;
    l.groupSize = groupSizeFor(s, l.cols, p);
    l.groups = l.cols / l.groupSize;
    const auto qzeros = requireTensor(ck, p + ".qzeros", "AWQ");
    requireDtype(ck, qzeros, {io::DType::I32, io::DType::U32});
    requireShape(ck, qzeros, {l.groups, l.rows / 8},
                 "qweight " + shapeText(qweight.shape()) + " in groups of " + std::to_string(l.groupSize));
    const auto scales = requireTensor(ck, p + ".scales", "AWQ");
    requireDtype(ck, scales, {io::DType::F16, io::DType::BF16, io::DType::F32});
    requireShape(ck, scales, {l.groups, l.rows},
                 "qweight " + shapeText(qweight.shape()) + " in groups of " + std::to_string(l.groupSize));
    if (!unpack) return l;

    l.scales = scales.toMatrix().transpose();
    const auto zw = readWords(qzeros);
    l.zeros.resize(l.rows, l.groups);
    for (std::int64_t g = 0; g < l.groups; ++g)
        for (std::int64_t n = 0; n < l.rows; ++n)
            l.zeros(n, g) = static_cast<float>(
                nibble(zw[static_cast<std::size_t>(g * (l.rows / 8) + n / 8)], kAwqSlotOfColumn[n % 8]));
    const auto qw = readWords(qweight);
    l.codes.resize(static_cast<std::size_t>(l.rows * l.cols));
    for (std::int64_t k = 0; k < l.cols; ++k)
        for (std::int64_t n = 0; n < l.rows; ++n)
            l.codes[static_cast<std::size_t>(n * l.cols + k)] = static_cast<std::uint8_t>(
                nibble(qw[static_cast<std::size_t>(k * (l.rows / 8) + n / 8)], kAwqSlotOfColumn[n % 8]));
    return l;
}

AwqLayer readGemv(const io::Checkpoint& ck, const std::string& p, const AwqScheme& s, bool unpack) {
    const auto qweight = requireTensor(ck, p + ".qweight", "AWQ gemv");
    requireDtype(ck, qweight, {io::DType::I32, io::DType::U32});
    requireRank(ck, qweight, 2);
    AwqLayer l;
    l.rows = qweight.shape()[0];
    l.cols = qweight.shape()[1] * 8;
    l.groupSize = groupSizeFor(s, l.cols, p);
    l.groups = l.cols / l.groupSize;
    const auto qzeros = requireTensor(ck, p + ".qzeros", "AWQ gemv");
    requireDtype(ck, qzeros, {io::DType::I32, io::DType::U32});
    requireRank(ck, qzeros, 2);
    if (qzeros.shape()[0] != l.rows || qzeros.shape()[1] * 8 < l.groups)
        failTensor(ck, qzeros.name(),
                   "shape " + shapeText(qzeros.shape()) + " cannot hold " + std::to_string(l.groups) +
                       " zeros for each of " + std::to_string(l.rows) + " outputs");
    const auto scales = requireTensor(ck, p + ".scales", "AWQ gemv");
    requireDtype(ck, scales, {io::DType::F16, io::DType::BF16, io::DType::F32});
    requireShape(ck, scales, {l.rows, qzeros.shape()[1] * 8}, "eight scales per qzeros word");
    if (!unpack) return l;

    l.scales = scales.toMatrix().leftCols(l.groups);  // the rest is padding
    const auto zw = readWords(qzeros);
    const auto zWidth = qzeros.shape()[1];
    l.zeros.resize(l.rows, l.groups);
    for (std::int64_t n = 0; n < l.rows; ++n)
        for (std::int64_t g = 0; g < l.groups; ++g)
            l.zeros(n, g) =
                static_cast<float>(nibble(zw[static_cast<std::size_t>(n * zWidth + g / 8)], static_cast<int>(g % 8)));
    const auto qw = readWords(qweight);
    l.codes.resize(static_cast<std::size_t>(l.rows * l.cols));
    for (std::int64_t n = 0; n < l.rows; ++n)
        for (std::int64_t k = 0; k < l.cols; ++k)
            l.codes[static_cast<std::size_t>(n * l.cols + k)] = static_cast<std::uint8_t>(
                nibble(qw[static_cast<std::size_t>(n * (l.cols / 8) + k / 8)], static_cast<int>(k % 8)));
    return l;
}

class AwqCodec final : public LinearCodec {
public:
    std::string_view name() const override { return "awq"; }

    std::vector<LinearRef> linears(const io::Checkpoint& checkpoint) const override {
        return refsWithSuffix(checkpoint, ".qweight");
    }

    LayerQuantInfo describe(const io::Checkpoint& ck, const nlohmann::json& config,
                            const LinearRef& ref) const override {
        requireUnstacked(ck, ref, name());
        const auto s = schemeFor(config, ref.prefix);
        const auto l = s.gemv ? readGemv(ck, ref.prefix, s, false) : readGemm(ck, ref.prefix, s, false);
        LayerQuantInfo info;
        info.ref = ref;
        info.codec = s.gemv ? "awq-gemv" : "awq-gemm";
        info.scheme = "int";
        info.bits = 4;
        info.groupSize = s.groupSize;
        info.granularity = s.groupSize == -1 ? "channel" : "group";
        info.symmetric = false;  // AutoAWQ always stores zero points
        info.rows = l.rows;
        info.cols = l.cols;
        return info;
    }

    DecodedLinear decode(const io::Checkpoint& ck, const nlohmann::json& config, const LinearRef& ref) const override {
        requireUnstacked(ck, ref, name());
        const auto s = schemeFor(config, ref.prefix);
        auto l = s.gemv ? readGemv(ck, ref.prefix, s, true) : readGemm(ck, ref.prefix, s, true);
        DecodedLinear d;
        d.ref = ref;
        d.quantized = true;
        d.weight.resize(l.rows, l.cols);
        for (std::int64_t n = 0; n < l.rows; ++n)
            for (std::int64_t k = 0; k < l.cols; ++k) {
                const auto g = k / l.groupSize;
                d.weight(n, k) =
                    (static_cast<float>(l.codes[static_cast<std::size_t>(n * l.cols + k)]) - l.zeros(n, g)) *
                    l.scales(n, g);
            }
        auto& q = d.parts;
        q = quant::QuantizedLinear::intGrid(quant::Method::Awq, l.rows, l.cols, 4, s.groupSize, false);
        q.codes = std::move(l.codes);
        q.scales = std::move(l.scales);
        q.zeros = std::move(l.zeros);
        d.bias = readBias(ck, ref, l.rows);
        return d;
    }
};

}  // namespace

const LinearCodec& awqCodec() {
    static const AwqCodec codec;
    return codec;
}

}  // namespace qs::formats::detail
