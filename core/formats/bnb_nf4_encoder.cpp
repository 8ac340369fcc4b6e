// "bnb-nf4": bitsandbytes NF4 as transformers saves a Linear4bit (docs/formats/bitsandbytes.md):
//   <p>.weight                                   U8 [ceil(N*K/2), 1]  flat row-major codes, FIRST element in the HIGH nibble
//   <p>.weight.absmax                            U8 [nblocks] codes (double quantization) or F32 [nblocks]
//   <p>.weight.quant_map                         F32 [16]   the NF4 levels
//   <p>.weight.nested_absmax                     F32 [ceil(nblocks/256)]  (double quantization)
//   <p>.weight.nested_quant_map                  F32 [256]  the signed dynamic map (double quantization)
//   <p>.weight.quant_state.bitsandbytes__nf4     U8 [len]   JSON {quant_type, blocksize, dtype, shape, nested_*}
// w[i] = quant_map[code(i)] * absmax[i / blocksize]; absmax[b] = nested_quant_map[code[b]] *
// nested_absmax[b / 256] + nested_offset. The quant_state's dtype (what bitsandbytes dequantizes to)
// is float32, so the stored weights come back exactly as QuantScope computed them; transformers casts
// to bnb_4bit_compute_dtype for the matmul.
#include <cmath>
#include <string>

#include "qs/quant/nf4.h"
#include "qs/quant/nibbles.h"

#include "encoder_support.h"
#include "encoders.h"
#include "tensor_encoding.h"

namespace qs::formats::detail {

namespace {

constexpr std::int64_t kNestedBlockSize = 256;  // bitsandbytes' blocksize for the absmax codes

std::int64_t blockCount(const quant::QuantizedLinear& q) { return q.rows * q.cols / q.blockCols; }

std::string shapeProblem(const quant::QuantizedLinear& q) {
    const int bs = q.blockCols;
    if (q.rows <= 0 || q.cols <= 0) return "the weight " + shapeOf(q) + " is empty";
    if (q.blockRows != 1 || !q.gIdx.empty() || bs < 32 || bs > 4096 || (bs & (bs - 1)) != 0)
        return "its blocks are not the 32..4096 (power of two) consecutive weights bitsandbytes uses";
    if (q.cols % bs != 0)
        return "in_features " + std::to_string(q.cols) + " is not a multiple of the block size " + std::to_string(bs) +
               ", so bitsandbytes' flat blocks would straddle rows";
    if (q.codes.size() != static_cast<std::size_t>(q.rows * q.cols) || q.scales.rows() != q.rows ||
        q.scales.cols() != q.cols / bs)
        return "its codes and scales do not fit the weight " + shapeOf(q);
    for (const std::uint8_t c : q.codes)
        if (c > 15) return "a code " + std::to_string(c) + " is not a 4-bit NF4 index";
    for (Eigen::Index i = 0; i < q.scales.size(); ++i)
        if (!std::isfinite(q.scales.data()[i])) return "an absmax is not finite";
    return "";
}

// The stored form must give back q.scales exactly, through bitsandbytes' own arithmetic.
std::string doubleQuantProblem(const quant::QuantizedLinear& q) {
    const std::int64_t blocks = blockCount(q);
    const auto nested = static_cast<std::size_t>((blocks + kNestedBlockSize - 1) / kNestedBlockSize);
    if (q.scaleCodes.size() != static_cast<std::size_t>(blocks) || q.scaleScales.size() != nested)
        return "its double quantization holds " + std::to_string(q.scaleCodes.size()) + " absmax codes and " +
               std::to_string(q.scaleScales.size()) + " nested scales, expected " + std::to_string(blocks) + " and " +
               std::to_string(nested) + " (256 absmax per nested block)";
    const auto& map = quant::dynamicMap8();
    for (std::int64_t b = 0; b < blocks; ++b) {
        const float decoded = map[q.scaleCodes[static_cast<std::size_t>(b)]] *
                              q.scaleScales[static_cast<std::size_t>(b / kNestedBlockSize)];
        if (decoded + q.scaleOffset != q.scales.data()[b])
            return "absmax code " + std::to_string(b) + " does not decode to its scale (codes and scales disagree)";
    }
    return "";
}

// json.dumps with Python's default separators, in QuantState.as_dict's key order.
std::string quantStateJson(const quant::QuantizedLinear& q) {
    std::string s = R"({"quant_type": "nf4", "blocksize": )" + std::to_string(q.blockCols) +
                    R"(, "dtype": "float32", "shape": [)" + std::to_string(q.rows) + ", " + std::to_string(q.cols) +
                    "]";
    if (!q.scaleCodes.empty())
        s += R"(, "nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": )" +
             nlohmann::json(static_cast<double>(q.scaleOffset)).dump();
    return s + "}";
}

class BnbNf4Encoder final : public LinearEncoder {
public:
    std::string_view name() const override { return "bnb-nf4"; }

    std::string_view description() const override {
        return "bitsandbytes NF4 (4-bit NormalFloat, QLoRA) with double-quantized absmax (transformers, vLLM)";
    }

    std::string layoutRefusal(const quant::QuantizedLinear& q) const override {
        if (q.method != quant::Method::Nf4 || q.codeKind != quant::CodeKind::Nf4)
            return "it holds NF4 results, and this linear was quantized with " +
                   std::string(quant::methodName(q.method));
        if (std::string why = shapeProblem(q); !why.empty()) return why;
        return q.scaleCodes.empty() ? "" : doubleQuantProblem(q);
    }

    std::vector<EncodedTensor> encode(const std::string& prefix, const quant::QuantizedLinear& q) const override {
        requireEncodable(*this, prefix, q);
        const std::string w = prefix + ".weight";
        const std::int64_t blocks = blockCount(q);
        const auto packed = quant::packNibbles(q.codes, quant::NibbleOrder::EvenHigh);
        std::vector<EncodedTensor> out;
        out.push_back(byteTensor(w, io::DType::U8, {static_cast<std::int64_t>(packed.size()), 1}, packed));
        if (q.scaleCodes.empty()) {
            out.push_back(floatTensor(w + ".absmax", io::DType::F32, {blocks}, q.scales.data()));
        } else {
            out.push_back(byteTensor(w + ".absmax", io::DType::U8, {blocks}, q.scaleCodes));
            out.push_back(floatTensor(w + ".nested_absmax", io::DType::F32,
                                      {static_cast<std::int64_t>(q.scaleScales.size())}, q.scaleScales.data()));
            out.push_back(floatTensor(w + ".nested_quant_map", io::DType::F32, {256}, quant::dynamicMap8().data()));
        }
        out.push_back(floatTensor(w + ".quant_map", io::DType::F32, {16}, quant::nf4Table().data()));
        const std::string json = quantStateJson(q);
        const std::vector<std::uint8_t> state(json.begin(),
                                              json.end());  // UTF-8 bytes, as pack_dict_to_tensor stores them
        out.push_back(byteTensor(w + ".quant_state.bitsandbytes__nf4", io::DType::U8,
                                 {static_cast<std::int64_t>(state.size())}, state));
        return out;
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        bool doubleQuant = false;
        for (const auto& [prefix, q] : scheme.linears) doubleQuant = doubleQuant || !q->scaleCodes.empty();
        const nlohmann::json skip =
            scheme.denseLinears.empty() ? nlohmann::json(nullptr) : nlohmann::json(scheme.denseLinears);
        return {{"quant_method", "bitsandbytes"},
                {"_load_in_4bit", true},
                {"_load_in_8bit", false},
                {"load_in_4bit", true},
                {"load_in_8bit", false},
                {"llm_int8_threshold", 6.0},
                {"llm_int8_skip_modules", skip},
                {"llm_int8_enable_fp32_cpu_offload", false},
                {"llm_int8_has_fp16_weight", false},
                {"bnb_4bit_quant_type", "nf4"},
                {"bnb_4bit_use_double_quant", doubleQuant},
                {"bnb_4bit_compute_dtype", torchDTypeName(scheme.sourceDType)},
                {"bnb_4bit_quant_storage", "uint8"}};
    }
};

}  // namespace

const LinearEncoder& bnbNf4Encoder() {
    static const BnbNf4Encoder encoder;
    return encoder;
}

}  // namespace qs::formats::detail
