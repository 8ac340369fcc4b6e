// bitsandbytes LLM.int8 (Linear8bitLt), docs/formats/bitsandbytes.md: <p>.weight I8 [N, K] row-major,
// <p>.SCB F32 [N] (per-row absmax), <p>.weight_format U8 0; W[n, k] = q * SCB[n] / 127.
#include "qs/error.h"

#include "codecs.h"
#include "tensor_access.h"

namespace qs::formats::detail {

namespace {

class BnbInt8Codec final : public LinearCodec {
public:
    std::string_view name() const override { return "bnb-int8"; }

    std::vector<LinearRef> linears(const io::Checkpoint& ck) const override { return refsWithSuffix(ck, ".SCB"); }

    LayerQuantInfo describe(const io::Checkpoint& ck, const nlohmann::json&, const LinearRef& ref) const override {
        const auto w = open(ck, ref);
        LayerQuantInfo info;
        info.ref = ref;
        info.codec = "bitsandbytes";
        info.scheme = "int8";
        info.bits = 8;
        info.granularity = "channel";
        info.rows = w.shape()[0];
        info.cols = w.shape()[1];
        return info;
    }

    DecodedLinear decode(const io::Checkpoint& ck, const nlohmann::json&, const LinearRef& ref) const override {
        const auto w = open(ck, ref);
        const std::int64_t rows = w.shape()[0], cols = w.shape()[1];
        const auto scb = ck.tensor(ref.prefix + ".SCB").toF32();
        const auto* q8 = reinterpret_cast<const std::int8_t*>(bytePointer(w));
        DecodedLinear d;
        d.ref = ref;
        d.quantized = true;
        d.weight.resize(rows, cols);
        // Signed codes as QuantizedLinear's unsigned ones: code + 128 with zero 128.
        auto& q = d.parts;
        q = quant::QuantizedLinear::intGrid(quant::Method::Rtn, rows, cols, 8, -1, true);
        q.codes.resize(static_cast<std::size_t>(rows * cols));
        q.scales.resize(rows, 1);
        for (std::int64_t r = 0; r < rows; ++r) {
            q.scales(r, 0) = scb[static_cast<std::size_t>(r)] / 127.0f;
            for (std::int64_t c = 0; c < cols; ++c) {
                const int v = q8[r * cols + c];
                q.codes[static_cast<std::size_t>(r * cols + c)] = static_cast<std::uint8_t>(v + 128);
                d.weight(r, c) = static_cast<float>(v) * scb[static_cast<std::size_t>(r)] / 127.0f;
            }
        }
        q.zeros = MatrixF::Constant(rows, 1, 128.0f);
        d.bias = readBias(ck, ref, rows);
        return d;
    }

private:
    static io::TensorView open(const io::Checkpoint& ck, const LinearRef& ref) {
        requireUnstacked(ck, ref, "bitsandbytes int8");
        const auto w = requireTensor(ck, ref.prefix + ".weight", "LLM.int8");
        requireDtype(ck, w, {io::DType::I8});
        requireRank(ck, w, 2);
        const auto scb = requireTensor(ck, ref.prefix + ".SCB", "LLM.int8");
        requireDtype(ck, scb, {io::DType::F32, io::DType::F16, io::DType::BF16});
        requireShape(ck, scb, {w.shape()[0]}, "one absmax per row of weight " + shapeText(w.shape()));
        if (hasTensor(ck, ref.prefix + ".weight_format")) {
            const auto f = ck.tensor(ref.prefix + ".weight_format");
            if (f.numel() != 1 || f.toF32()[0] != 0.0f)
                failTensor(ck, f.name(), "is not 0 (row-major); tiled int8 layouts are not readable");
        }
        return w;
    }
};

}  // namespace

const LinearCodec& bnbInt8Codec() {
    static const BnbInt8Codec codec;
    return codec;
}

}  // namespace qs::formats::detail
