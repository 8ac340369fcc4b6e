// GPTQ (AutoGPTQ / GPTQModel), 2/3/4/8-bit, docs/formats/gptq.md:
//   qweight I32 [K*bits/32, N] packed along K, qzeros I32 [groups, N*bits/32] packed along N,
//   scales [groups, N], g_idx I32 [K];  W[n, k] = scales[g, n] * (q[k, n] - z[g, n]),  g = g_idx[k].
// v1 ("gptq") stores zero - 1 per field, v2 ("gptq_v2") the zero itself.
#include <algorithm>
#include <limits>

#include "qs/error.h"

#include "bit_fields.h"
#include "codecs.h"
#include "module_match.h"
#include "quant_config.h"
#include "tensor_access.h"

namespace qs::formats::detail {

namespace {

struct GptqScheme {
    int bits = 4;
    int groupSize = 128;
    bool descAct = false;
    bool symmetric = true;
    bool v2 = false;
};

constexpr io::IntRange kBitsRange{1, 32};
constexpr io::IntRange kGroupRange{-1, std::numeric_limits<std::int32_t>::max()};

void applyOverrides(const nlohmann::json& j, GptqScheme& s, std::string_view at = "") {
    s.bits = jsonInt(j, "bits", jsonInt(j, "w_bit", s.bits, kBitsRange, at), kBitsRange, at);
    s.groupSize = jsonInt(j, "group_size", jsonInt(j, "q_group_size", s.groupSize, kGroupRange, at), kGroupRange, at);
    s.descAct = jsonBool(j, "desc_act", s.descAct, at);
    s.symmetric = jsonBool(j, "sym", s.symmetric, at);
}

// The config's scheme, with GPTQModel's `dynamic` overrides: the first regex (re.match, optional
// "+:" prefix) that matches the module wins; "-:" keys mark skipped modules, which hold no qweight.
GptqScheme schemeFor(const nlohmann::json& config, const std::string& module) {
    GptqScheme s;
    applyOverrides(config, s);
    const auto format = lowerCase(jsonString(config, "checkpoint_format", jsonString(config, "format", "gptq")));
    if (format != "gptq" && format != "gptq_v2")
        throw ConfigError("'checkpoint_format' is '" + format + "', not readable (only gptq and gptq_v2 are)");
    s.v2 = format == "gptq_v2";
    if (const auto it = config.find("dynamic"); it != config.end() && it->is_object()) {
        for (const auto& [key, value] : it->items()) {
            if (key.starts_with("-:")) continue;
            const std::string_view pattern =
                key.starts_with("+:") ? std::string_view(key).substr(2) : std::string_view(key);
            if (value.is_object() && regexMatchesStart(pattern, module)) {
                applyOverrides(value, s, "dynamic['" + key + "']");
                break;
            }
        }
    }
    if (s.bits != 2 && s.bits != 3 && s.bits != 4 && s.bits != 8)
        throw ConfigError("bits " + std::to_string(s.bits) + " for " + module + " (readable: 2, 3, 4, 8)");
    if (s.groupSize == 0)
        throw ConfigError("'group_size' 0 for " + module + " (a positive size, or -1 for one group per row)");
    return s;
}

struct GptqTensors {
    io::TensorView qweight, qzeros, scales;
    std::int64_t rows = 0, cols = 0, groups = 0, groupSize = 0;
};

// Checks every shape against qweight and the scheme before a byte is unpacked.
GptqTensors openTensors(const io::Checkpoint& ck, const std::string& p, const GptqScheme& s) {
    const auto qweight = requireTensor(ck, p + ".qweight", "GPTQ");
    requireDtype(ck, qweight, {io::DType::I32, io::DType::U32});
    requireRank(ck, qweight, 2);
    const std::int64_t packedRows = qweight.shape()[0], n = qweight.shape()[1];
    if (packedRows * 32 % s.bits != 0 || (s.bits == 3 && packedRows % 3 != 0))
        failTensor(ck, qweight.name(),
                   "shape " + shapeText(qweight.shape()) + " cannot hold " + std::to_string(s.bits) +
                       "-bit values packed along the input dimension");
    const std::int64_t k = packedRows * 32 / s.bits;
    const std::int64_t g = s.groupSize == -1 ? k : s.groupSize;
    if (g <= 0) failTensor(ck, qweight.name(), "holds no inputs to group");
    const std::int64_t groups = ceilDiv(k, g);
    const auto scales = requireTensor(ck, p + ".scales", "GPTQ");
    requireDtype(ck, scales, {io::DType::F16, io::DType::BF16, io::DType::F32});
    requireShape(ck, scales, {groups, n},
                 "qweight " + shapeText(qweight.shape()) + " holds " + std::to_string(k) + " inputs in groups of " +
                     std::to_string(g));
    const auto qzeros = requireTensor(ck, p + ".qzeros", "GPTQ");
    requireDtype(ck, qzeros, {io::DType::I32, io::DType::U32});
    if (n * s.bits % 32 != 0)
        failTensor(ck, qweight.name(),
                   std::to_string(n) + " outputs cannot be packed " + std::to_string(s.bits) + "-bit into qzeros");
    requireShape(ck, qzeros, {groups, n * s.bits / 32}, "one packed zero per group and output");
    // desc_act promises the act-order permutation: decoding without it would put columns in the wrong groups.
    if (s.descAct && groups > 1) requireTensor(ck, p + ".g_idx", "the config's desc_act (the act-order permutation)");
    return {qweight, qzeros, scales, n, k, groups, g};
}

// g_idx as stored (act-order), or k / G when absent.
std::vector<std::int32_t> readGroupIndex(const io::Checkpoint& ck, const std::string& p, const GptqTensors& t) {
    std::vector<std::int32_t> gIdx(static_cast<std::size_t>(t.cols));
    if (!hasTensor(ck, p + ".g_idx")) {
        for (std::int64_t c = 0; c < t.cols; ++c)
            gIdx[static_cast<std::size_t>(c)] = static_cast<std::int32_t>(c / t.groupSize);
        return gIdx;
    }
    const auto g = ck.tensor(p + ".g_idx");
    requireDtype(ck, g, {io::DType::I32, io::DType::I64});
    requireShape(ck, g, {t.cols}, "one group index per input of qweight " + shapeText(t.qweight.shape()));
    const auto values = g.toF32();  // exact: indices are far below 2^24
    for (std::size_t c = 0; c < gIdx.size(); ++c) {
        if (values[c] < 0 || values[c] >= static_cast<float>(t.groups))
            failTensor(ck, g.name(),
                       "input " + std::to_string(c) + " names group " + std::to_string(values[c]) + " of " +
                           std::to_string(t.groups));
        gIdx[c] = static_cast<std::int32_t>(values[c]);
    }
    return gIdx;
}

// Zero points [groups, N]. v1 stores zero - 1; adding 1 back and masking maps the field 2^bits - 1
// to zero 0, the only reading that keeps zeros in the quantizer's range [0, 2^bits - 1] (AutoGPTQ
// qlinear_cuda_old; other kernels read 2^bits there, docs/formats/gptq.md).
MatrixF readZeros(const GptqTensors& t, const GptqScheme& s) {
    const auto words = readWords(t.qzeros);
    const std::int64_t wordsPerRow = t.qzeros.shape()[1];
    const std::uint32_t mask = (1u << s.bits) - 1u;
    MatrixF zeros(t.groups, t.rows);
    for (std::int64_t g = 0; g < t.groups; ++g)
        for (std::int64_t n = 0; n < t.rows; ++n) {
            const std::uint32_t stored =
                bitField(words.data() + g * wordsPerRow, 1, static_cast<std::uint64_t>(n * s.bits), s.bits);
            zeros(g, n) = static_cast<float>(s.v2 ? stored : ((stored + 1u) & mask));
        }
    return zeros;
}

class GptqCodec final : public LinearCodec {
public:
    std::string_view name() const override { return "gptq"; }

    std::vector<LinearRef> linears(const io::Checkpoint& checkpoint) const override {
        return refsWithSuffix(checkpoint, ".qweight");
    }

    LayerQuantInfo describe(const io::Checkpoint& ck, const nlohmann::json& config,
                            const LinearRef& ref) const override {
        requireUnstacked(ck, ref, name());
        const auto s = schemeFor(config, ref.prefix);
        const auto t = openTensors(ck, ref.prefix, s);
        LayerQuantInfo info;
        info.ref = ref;
        info.codec = s.v2 ? "gptq_v2" : "gptq";
        info.scheme = "int";
        info.bits = s.bits;
        info.groupSize = s.groupSize;
        info.granularity = s.groupSize == -1 ? "channel" : "group";
        info.actOrder = s.descAct && s.groupSize != -1;  // one group: g_idx is all zeros, order is moot
        info.symmetric = s.symmetric;
        info.rows = t.rows;
        info.cols = t.cols;
        return info;
    }

    DecodedLinear decode(const io::Checkpoint& ck, const nlohmann::json& config, const LinearRef& ref) const override {
        requireUnstacked(ck, ref, name());
        const auto s = schemeFor(config, ref.prefix);
        const auto t = openTensors(ck, ref.prefix, s);
        const auto gIdx = readGroupIndex(ck, ref.prefix, t);
        const MatrixF zeros = readZeros(t, s);
        const MatrixF scales = t.scales.toMatrix();
        const auto qweight = readWords(t.qweight);

        DecodedLinear d;
        d.ref = ref;
        d.quantized = true;
        d.weight.resize(t.rows, t.cols);
        auto& q = d.parts;
        q = quant::QuantizedLinear::intGrid(quant::Method::Gptq, t.rows, t.cols, s.bits, s.groupSize, s.symmetric);
        q.codes.resize(static_cast<std::size_t>(t.rows * t.cols));
        for (std::int64_t n = 0; n < t.rows; ++n)
            for (std::int64_t k = 0; k < t.cols; ++k) {
                const auto code = bitField(qweight.data() + n, static_cast<std::size_t>(t.rows),
                                           static_cast<std::uint64_t>(k * s.bits), s.bits);
                const int g = gIdx[static_cast<std::size_t>(k)];
                q.codes[static_cast<std::size_t>(n * t.cols + k)] = static_cast<std::uint8_t>(code);
                d.weight(n, k) = scales(g, n) * (static_cast<float>(code) - zeros(g, n));
            }
        q.scales = scales.transpose();
        q.zeros = zeros.transpose();
        bool sequential = true;
        for (std::int64_t k = 0; k < t.cols; ++k)
            sequential = sequential && gIdx[static_cast<std::size_t>(k)] == k / t.groupSize;
        if (!sequential) q.gIdx = gIdx;
        d.bias = readBias(ck, ref, t.rows);
        return d;
    }
};

}  // namespace

const LinearCodec& gptqCodec() {
    static const GptqCodec codec;
    return codec;
}

}  // namespace qs::formats::detail
