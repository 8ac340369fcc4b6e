// AWQ GEMM writer (AutoAWQ WQLinear_GEMM), docs/formats/awq.md: per linear qweight I32 [K, N/8]
// packed along N, qzeros I32 [K/G, N/8] the same way, scales F16 [K/G, N]; raw zeros. Inside a word
// covering columns 8c..8c+7, nibble slot i holds column 8c + AWQ_ORDER[i], AWQ_ORDER =
// [0, 2, 4, 6, 1, 3, 5, 7], so logical column 1 sits in bits 16-19.
// The layout stores the quantized W * diag(s); the exporter folds 1/s into the preceding norm or
// linear (AutoAWQ's apply_scale), so this encoder writes dequantize() and ignores inputScales.
#include <array>

#include "qs/error.h"

#include "encoders.h"
#include "int_grid_check.h"
#include "tensor_encoding.h"

namespace qs::formats::detail {

namespace {

using quant::QuantizedLinear;

// Nibble slot of logical column j within its word (the inverse of AWQ_ORDER).
constexpr std::array<int, 8> kSlotOfColumn = {0, 4, 1, 5, 2, 6, 3, 7};

// `value(n)` for every output n of one line, packed eight to a word in AWQ order.
template <typename Value>
void packLine(std::uint32_t* words, std::int64_t n, Value value) {
    for (std::int64_t col = 0; col < n; ++col)
        words[col / 8] |= (static_cast<std::uint32_t>(value(col)) & 0xFu)
                          << (4 * kSlotOfColumn[static_cast<std::size_t>(col % 8)]);
}

std::vector<std::uint32_t> packCodes(const QuantizedLinear& q) {
    const std::int64_t n = q.rows, k = q.cols;
    std::vector<std::uint32_t> words(static_cast<std::size_t>(k * (n / 8)), 0u);
    for (std::int64_t c = 0; c < k; ++c)
        packLine(words.data() + c * (n / 8), n,
                 [&](std::int64_t r) { return q.codes[static_cast<std::size_t>(r * k + c)]; });
    return words;
}

std::vector<std::uint32_t> packZeros(const QuantizedLinear& q) {
    const std::int64_t n = q.rows, groups = q.zeros.cols();
    std::vector<std::uint32_t> words(static_cast<std::size_t>(groups * (n / 8)), 0u);
    for (std::int64_t g = 0; g < groups; ++g)
        packLine(words.data() + g * (n / 8), n,
                 [&](std::int64_t r) { return static_cast<std::uint32_t>(q.zeros(r, g)); });
    return words;
}

class AwqGemmEncoder final : public LinearEncoder {
public:
    std::string_view name() const override { return "awq"; }

    std::string_view description() const override {
        return "AWQ 4-bit GEMM (AutoAWQ): transformers, vLLM (awq / awq_marlin)";
    }

    std::string layoutRefusal(const QuantizedLinear& q) const override {
        if (auto p = intGridProblem(q); !p.empty()) return p;
        if (q.bits != 4) return "AWQ stores 4-bit codes only, not " + std::to_string(q.bits) + "-bit";
        if (q.groupSize == -1) return "AWQ needs a group size (AutoAWQ and vLLM have no per-row variant)";
        if (auto p = groupDivisionProblem(q); !p.empty()) return p;
        if (q.rows % 8 != 0) return "AWQ needs out_features % 8 == 0 (N=" + std::to_string(q.rows) + ")";
        for (std::int64_t c = 0; c < static_cast<std::int64_t>(q.gIdx.size()); ++c)
            if (q.gIdx[static_cast<std::size_t>(c)] != c / q.groupSize)
                return "AWQ has no g_idx, so act-order groups cannot be stored (use --format gptq)";
        return "";
    }

    std::vector<EncodedTensor> encode(const std::string& prefix, const QuantizedLinear& q) const override {
        if (auto why = refusal(q); !why.empty()) throw Error(prefix + ": cannot write as awq: " + why);
        const std::int64_t groups = q.scales.cols();
        const MatrixF scalesT = q.scales.transpose();  // [groups, N]
        std::vector<EncodedTensor> out;
        out.push_back(wordTensor(prefix + ".qweight", {q.cols, q.rows / 8}, packCodes(q)));
        out.push_back(wordTensor(prefix + ".qzeros", {groups, q.rows / 8}, packZeros(q)));
        out.push_back(matrixTensor(prefix + ".scales", io::DType::F16, {groups, q.rows}, scalesT));
        return out;
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        if (scheme.linears.empty()) throw Error("awq export without quantized linears");
        const int groupSize = scheme.linears.front().second->groupSize;
        for (const auto& [prefix, q] : scheme.linears)
            if (q->groupSize != groupSize)
                throw Error("AWQ stores one group size for the whole model, but " + prefix + " uses " +
                            std::to_string(q->groupSize) + " and " + scheme.linears.front().first + " " +
                            std::to_string(groupSize));
        // vLLM requires bits, group_size and zero_point; AutoAWQ GEMM always stores zeros.
        nlohmann::json notConverted = nlohmann::json(nullptr);
        if (!scheme.denseLinears.empty()) notConverted = scheme.denseLinears;
        return {{"quant_method", "awq"}, {"bits", 4},         {"group_size", groupSize},
                {"zero_point", true},    {"version", "gemm"}, {"modules_to_not_convert", notConverted}};
    }
};

}  // namespace

const LinearEncoder& awqGemmEncoder() {
    static const AwqGemmEncoder encoder;
    return encoder;
}

}  // namespace qs::formats::detail
