// GPTQ writer, docs/formats/gptq.md: per linear qweight I32 [K*bits/32, N] (packed along K),
// qzeros I32 [groups, N*bits/32] (packed along N), scales F16 [groups, N], g_idx I32 [K], value i
// of a stream at bits [i*bits, i*bits+bits) (3-bit values straddle words).
//   "gptq"    (v1, AutoGPTQ and every consumer): stores zero - 1; symmetric grids only, since readers
//             disagree on the field an asymmetric zero of 0 becomes (2.5). Sym 4-bit: 0x77777777.
//   "gptq_v2" (GPTQModel, vLLM gptq): stores the zero itself; symmetric or asymmetric.
#include <algorithm>
#include <cmath>
#include <map>

#include "qs/error.h"

#include "bit_fields.h"
#include "encoders.h"
#include "fused_modules.h"
#include "int_grid_check.h"
#include "tensor_encoding.h"

namespace qs::formats::detail {

namespace {

using quant::QuantizedLinear;

bool gptqBits(int bits) { return bits == 2 || bits == 3 || bits == 4 || bits == 8; }

// The outputs one qzeros word (or three, for 3-bit) holds, which N must be a multiple of.
std::int64_t packUnit(int bits) { return bits == 3 ? 32 : 32 / bits; }

std::string shapeProblem(const QuantizedLinear& q) {
    if (!gptqBits(q.bits)) return "GPTQ stores 2, 3, 4 or 8 bits, not " + std::to_string(q.bits);
    if (auto p = groupDivisionProblem(q); !p.empty()) return p;
    const std::int64_t unit = packUnit(q.bits);
    const std::string packs = std::to_string(q.bits) + "-bit GPTQ packs " + std::to_string(unit) + " values per " +
                              (q.bits == 3 ? "3 words" : "word");
    if (q.cols % unit != 0)
        return packs + ": K=" + std::to_string(q.cols) + " is not a multiple of " + std::to_string(unit);
    if (q.rows % unit != 0)
        return packs + ": N=" + std::to_string(q.rows) + " is not a multiple of " + std::to_string(unit);
    return "";
}

std::vector<std::uint32_t> packCodes(const QuantizedLinear& q) {
    const std::int64_t n = q.rows, k = q.cols, packedRows = k * q.bits / 32;
    std::vector<std::uint32_t> words(static_cast<std::size_t>(packedRows * n), 0u);
    for (std::int64_t r = 0; r < n; ++r) {
        const std::uint8_t* codes = q.codes.data() + r * k;
        for (std::int64_t c = 0; c < k; ++c)
            setBitField(words.data() + r, static_cast<std::size_t>(n), static_cast<std::uint64_t>(c * q.bits), q.bits,
                        codes[c]);
    }
    return words;
}

std::vector<std::uint32_t> packZeros(const QuantizedLinear& q, bool v2) {
    const std::int64_t groups = q.zeros.cols(), n = q.rows, wordsPerGroup = n * q.bits / 32;
    std::vector<std::uint32_t> words(static_cast<std::size_t>(groups * wordsPerGroup), 0u);
    for (std::int64_t g = 0; g < groups; ++g)
        for (std::int64_t r = 0; r < n; ++r) {
            const auto zero = static_cast<std::int64_t>(q.zeros(r, g));
            // v1: zero - 1 per field, masked by setBitField, so no borrow reaches a neighbour.
            const auto stored = static_cast<std::uint32_t>(v2 ? zero : zero - 1);
            setBitField(words.data() + g * wordsPerGroup, 1, static_cast<std::uint64_t>(r * q.bits), q.bits, stored);
        }
    return words;
}

std::vector<std::int32_t> groupIndex(const QuantizedLinear& q) {
    std::vector<std::int32_t> gIdx(static_cast<std::size_t>(q.cols));
    for (std::int64_t c = 0; c < q.cols; ++c) gIdx[static_cast<std::size_t>(c)] = q.groupOf(c);
    return gIdx;
}

// A linear's scheme as the config states it: bits, group, symmetry, act-order.
struct GptqScheme {
    int bits = 4;
    int groupSize = 128;
    bool sym = true;
    bool descAct = false;

    auto operator<=>(const GptqScheme&) const = default;
    nlohmann::json json() const {
        return {{"bits", bits}, {"group_size", groupSize}, {"desc_act", descAct}, {"sym", sym}};
    }
    std::string text() const {
        return std::to_string(bits) + "-bit, group " + std::to_string(groupSize) + (sym ? ", sym" : ", asym") +
               (descAct ? ", act-order" : "");
    }
};

GptqScheme schemeOf(const QuantizedLinear& q) { return {q.bits, q.groupSize, q.symmetric, !q.gIdx.empty()}; }

// The model's scheme is the one most weights use; every other linear gets a GPTQModel `dynamic`
// override (re.match on the module name, "+:" positive, "-:" for a decoder linear left dense), keyed
// on the linear and on the fused linear vLLM loads it as (qkv_proj, gate_up_proj), whose shards must agree.
struct GptqConfig {
    GptqScheme base;
    double dampPercent = 0.0;  // 0 when not measured
    nlohmann::json dynamic = nlohmann::json::object();
};

std::string dynamicKey(const std::string& prefix) {
    const std::string fused = fusedPrefix(prefix);
    if (fused.empty()) return "^" + regexEscape(prefix) + "$";
    const auto dot = prefix.rfind('.');
    return "^" + regexEscape(prefix.substr(0, dot + 1)) + "(" + regexEscape(prefix.substr(dot + 1)) + "|" +
           regexEscape(fused.substr(dot + 1)) + ")$";
}

GptqConfig configOf(const ExportScheme& scheme, std::string_view format) {
    if (scheme.linears.empty()) throw Error(std::string(format) + " export without quantized linears");
    requireFusedShardsAlike(
        scheme, [](const QuantizedLinear& q) { return schemeOf(q).text(); }, format);
    std::map<GptqScheme, double> weights;
    GptqConfig c;
    for (const auto& [prefix, q] : scheme.linears) {
        weights[schemeOf(*q)] += double(q->rows) * double(q->cols);
        if (std::isfinite(q->dampPercent) && q->dampPercent > 0.0 && q->dampPercent < 1.0)
            c.dampPercent = std::max(c.dampPercent, q->dampPercent);
    }
    c.base = std::max_element(weights.begin(), weights.end(), [](const auto& a, const auto& b) {
                 return a.second < b.second;
             })->first;
    for (const auto& [prefix, q] : scheme.linears)
        if (schemeOf(*q) != c.base) c.dynamic["+:" + dynamicKey(prefix)] = schemeOf(*q).json();
    for (const auto& prefix : scheme.denseLinears)
        if (prefix.find(".layers.") != std::string::npos)
            c.dynamic["-:" + dynamicKey(prefix)] = nlohmann::json::object();
    return c;
}

class GptqEncoder final : public LinearEncoder {
public:
    explicit GptqEncoder(bool v2) : v2_(v2) {}

    std::string_view name() const override { return v2_ ? "gptq_v2" : "gptq"; }

    std::string_view description() const override {
        return v2_ ? "GPTQ with zero points as is (gptq_v2): GPTQModel and vLLM; symmetric or asymmetric"
                   : "GPTQ (v1 zeros, symmetric): transformers, vLLM (Marlin for 4/8-bit), AutoGPTQ, GPTQModel";
    }

    std::string layoutRefusal(const QuantizedLinear& q) const override {
        if (auto p = intGridProblem(q); !p.empty()) return p;
        if (auto p = shapeProblem(q); !p.empty()) return p;
        if (!v2_ && !q.symmetric)
            return "asymmetric zero points need --format gptq_v2 (v1 readers disagree on how a zero of 0 is stored)";
        return "";
    }

    std::vector<EncodedTensor> encode(const std::string& prefix, const QuantizedLinear& q) const override {
        if (auto why = refusal(q); !why.empty())
            throw Error(prefix + ": cannot write as " + std::string(name()) + ": " + why);
        const std::int64_t groups = q.scales.cols();
        const MatrixF scalesT = q.scales.transpose();  // [groups, N]
        std::vector<EncodedTensor> out;
        out.push_back(wordTensor(prefix + ".qweight", {q.cols * q.bits / 32, q.rows}, packCodes(q)));
        out.push_back(wordTensor(prefix + ".qzeros", {groups, q.rows * q.bits / 32}, packZeros(q, v2_)));
        out.push_back(matrixTensor(prefix + ".scales", io::DType::F16, {groups, q.rows}, scalesT));
        out.push_back(int32Tensor(prefix + ".g_idx", groupIndex(q)));
        return out;
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        const GptqConfig c = configOf(scheme, name());
        const GptqScheme& s = c.base;
        nlohmann::json config = {
            {"quant_method", "gptq"},
            {"bits", s.bits},
            {"group_size", s.groupSize},
            {"desc_act", s.descAct},
            {"sym", s.sym},
            {"static_groups", false},
            {"true_sequential", true},
            {"lm_head", false},
            {"checkpoint_format", std::string(name())},
            {"pack_dtype", "int32"},
            {"meta", {{"quantizer", {"quantscope"}}}},
        };
        // transformers requires 0 < damp_percent < 1 when present (docs/formats/gptq.md).
        if (c.dampPercent > 0.0) config["damp_percent"] = c.dampPercent;
        if (!c.dynamic.empty()) config["dynamic"] = c.dynamic;  // GPTQModel drops an empty one
        return config;
    }

    // AutoGPTQ writes the same dictionary to quantize_config.json; vLLM falls back to it.
    std::vector<std::pair<std::string, nlohmann::json>> extraFiles(const ExportScheme& scheme) const override {
        return {{"quantize_config.json", quantizationConfig(scheme)}};
    }

private:
    bool v2_;
};

}  // namespace

const LinearEncoder& gptqV1Encoder() {
    static const GptqEncoder encoder(false);
    return encoder;
}

const LinearEncoder& gptqV2Encoder() {
    static const GptqEncoder encoder(true);
    return encoder;
}

}  // namespace qs::formats::detail
