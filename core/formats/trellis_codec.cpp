// QuantScope's trellis layout (docs/formats/trellis.md, trellis_layout.h), written by
// trellis_encoder.cpp: start states, packed K-bit symbols and f16 group scales per linear, with a
// header that says the shape, L, K, the group size and the rotation seed. Decoding replays each
// group's states through quant::trellisDecode, so it is exactly QuantizedLinear::dequantize().
#include <cstring>

#include "qs/error.h"
#include "qs/quant/trellis.h"

#include "codecs.h"
#include "tensor_access.h"
#include "trellis_layout.h"

namespace qs::formats::detail {

namespace {

TrellisHeader readHeader(const io::Checkpoint& ck, const std::string& p) {
    const auto t = requireTensor(ck, p + std::string(kTrellisHeaderSuffix), "a QuantScope trellis linear");
    requireDtype(ck, t, {io::DType::I64});
    requireShape(ck, t, {kTrellisHeaderSize}, "out_features, in_features, state bits, bits, group size, rotation seed");
    std::int64_t v[kTrellisHeaderSize];
    std::memcpy(v, t.bytes().data(), sizeof v);
    const TrellisHeader h = TrellisHeader::fromValues(std::span<const std::int64_t, kTrellisHeaderSize>(v));
    if (const std::string why = h.problem(); !why.empty()) failTensor(ck, t.name(), why);
    return h;
}

void readStarts(const io::Checkpoint& ck, const std::string& p, const TrellisHeader& h, quant::QuantizedLinear& q) {
    const auto t = requireTensor(ck, p + std::string(kTrellisStartsSuffix), "a QuantScope trellis linear");
    requireDtype(ck, t, {io::DType::U16});
    requireShape(ck, t, {h.rows, h.cols / h.groupSize}, "one start state per group");
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(t.bytes().data());
    q.trellis.starts.resize(static_cast<std::size_t>(t.numel()));
    for (std::size_t i = 0; i < q.trellis.starts.size(); ++i) {
        const std::uint32_t s = bytes[2 * i] | (static_cast<std::uint32_t>(bytes[2 * i + 1]) << 8);
        if (s >> h.stateBits != 0)
            failTensor(ck, t.name(),
                       "start state " + std::to_string(s) + " has more than " + std::to_string(h.stateBits) + " bits");
        q.trellis.starts[i] = s;
    }
}

void readSymbols(const io::Checkpoint& ck, const std::string& p, const TrellisHeader& h, quant::QuantizedLinear& q) {
    const auto t = requireTensor(ck, p + std::string(kTrellisCodesSuffix), "a QuantScope trellis linear");
    requireDtype(ck, t, {io::DType::U8});
    requireShape(ck, t, {h.rows, trellisCodeBytesPerRow(h)}, "the packed symbols of each row");
    q.codes.assign(static_cast<std::size_t>(h.rows * h.cols), 0);
    unpackTrellisSymbols(h, bytePointer(t), q.codes);
    // The first code of a group is the low K bits of its start state, as quantizeTrellis keeps it.
    const std::uint32_t mask = (1u << h.bits) - 1u;
    for (std::size_t g = 0; g < q.trellis.starts.size(); ++g)
        q.codes[g * static_cast<std::size_t>(h.groupSize)] = static_cast<std::uint8_t>(q.trellis.starts[g] & mask);
}

quant::QuantizedLinear readParts(const io::Checkpoint& ck, const std::string& p) {
    const TrellisHeader h = readHeader(ck, p);
    quant::QuantizedLinear q =
        quant::QuantizedLinear::trellisCodes(h.rows, h.cols, h.stateBits, h.bits, h.groupSize, h.rotationSeed);
    readStarts(ck, p, h, q);
    const auto scales = requireTensor(ck, p + std::string(kTrellisScalesSuffix), "a QuantScope trellis linear");
    requireDtype(ck, scales, {io::DType::F16});
    requireShape(ck, scales, {h.rows, h.cols / h.groupSize}, "one scale per group");
    q.scales = scales.toMatrix();
    readSymbols(ck, p, h, q);
    return q;
}

class TrellisCodec final : public LinearCodec {
public:
    std::string_view name() const override { return "quantscope-trellis"; }

    std::vector<LinearRef> linears(const io::Checkpoint& ck) const override {
        return refsWithSuffix(ck, kTrellisHeaderSuffix);
    }

    LayerQuantInfo describe(const io::Checkpoint& ck, const nlohmann::json&, const LinearRef& ref) const override {
        requireUnstacked(ck, ref, name());
        const TrellisHeader h = readHeader(ck, ref.prefix);
        LayerQuantInfo info;
        info.ref = ref;
        info.codec = "quantscope-trellis";
        info.scheme = "trellis";
        info.bits = h.bits;
        info.groupSize = h.groupSize;
        info.granularity = "group";
        info.rows = h.rows;
        info.cols = h.cols;
        return info;
    }

    DecodedLinear decode(const io::Checkpoint& ck, const nlohmann::json&, const LinearRef& ref) const override {
        requireUnstacked(ck, ref, name());
        DecodedLinear d;
        d.ref = ref;
        d.quantized = true;
        d.parts = readParts(ck, ref.prefix);
        d.weight = quant::trellisDecode(d.parts);
        d.bias = readBias(ck, ref, d.parts.rows);
        return d;
    }
};

}  // namespace

const LinearCodec& trellisCodec() {
    static const TrellisCodec codec;
    return codec;
}

}  // namespace qs::formats::detail
