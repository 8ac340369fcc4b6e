// "quantscope-trellis": QuantScope's own layout for trellis-coded (QTIP-style bitshift) linears,
// documented to the byte in docs/formats/trellis.md and in trellis_layout.h. No other tool loads it
// (ExLlamaV3's EXL3 codes tiles differently); QuantScope reads it back with trellis_codec.cpp.
#include <cmath>
#include <cstring>
#include <string>

#include "qs/io/dtype.h"

#include "encoder_support.h"
#include "encoders.h"
#include "tensor_encoding.h"
#include "trellis_layout.h"

namespace qs::formats::detail {

namespace {

TrellisHeader headerOf(const quant::QuantizedLinear& q) {
    return {q.rows, q.cols, q.trellis.L, q.trellis.K, q.trellis.groupSize, q.trellis.rotationSeed};
}

std::string partsProblem(const quant::QuantizedLinear& q) {
    const TrellisHeader h = headerOf(q);
    const std::int64_t groups = q.rows * (q.cols / h.groupSize);
    if (q.bits != h.bits)
        return "its bits (" + std::to_string(q.bits) + ") differ from the trellis' K (" + std::to_string(h.bits) + ")";
    if (q.codes.size() != static_cast<std::size_t>(q.rows * q.cols) ||
        q.trellis.starts.size() != static_cast<std::size_t>(groups) || q.scales.rows() != q.rows ||
        q.scales.cols() != q.cols / h.groupSize)
        return "its codes, start states and scales do not fit the weight " + shapeOf(q);
    for (const std::uint32_t s : q.trellis.starts)
        if (s >> h.stateBits != 0)
            return "a start state " + std::to_string(s) + " has more than " + std::to_string(h.stateBits) + " bits";
    for (const std::uint8_t c : q.codes)
        if (c >> h.bits != 0)
            return "a symbol " + std::to_string(c) + " has more than " + std::to_string(h.bits) + " bits";
    for (Eigen::Index i = 0; i < q.scales.size(); ++i)
        if (const float s = q.scales.data()[i]; !std::isfinite(s) || io::f16ToF32(io::f32ToF16(s)) != s)
            return "group scale " + std::to_string(i) + " = " + std::to_string(s) +
                   " is not an f16 number (the layout stores f16 scales)";
    return "";
}

// The setting every linear shares, or null when they differ (each linear's header says its own).
template <typename Get>
nlohmann::json sharedValue(const ExportScheme& scheme, Get get) {
    if (scheme.linears.empty()) return nullptr;
    const auto first = get(*scheme.linears.front().second);
    for (const auto& [prefix, q] : scheme.linears)
        if (get(*q) != first) return nullptr;
    return first;
}

class TrellisEncoder final : public LinearEncoder {
public:
    std::string_view name() const override { return "quantscope-trellis"; }

    std::string_view description() const override {
        return "QuantScope's trellis layout (start states, packed K-bit symbols, f16 group scales); read by QuantScope "
               "only";
    }

    std::string layoutRefusal(const quant::QuantizedLinear& q) const override {
        if (q.method != quant::Method::Trellis || q.codeKind != quant::CodeKind::Trellis)
            return "it holds trellis-coded results, and this linear was quantized with " +
                   std::string(quant::methodName(q.method));
        if (std::string why = headerOf(q).problem(); !why.empty()) return why;
        return partsProblem(q);
    }

    std::vector<EncodedTensor> encode(const std::string& prefix, const quant::QuantizedLinear& q) const override {
        requireEncodable(*this, prefix, q);
        const TrellisHeader h = headerOf(q);
        const std::int64_t groupsPerRow = q.cols / h.groupSize;
        std::vector<EncodedTensor> out;
        out.push_back(int64Tensor(prefix + std::string(kTrellisHeaderSuffix), h.values()));
        out.push_back(startsTensor(prefix, q, groupsPerRow));
        out.push_back(
            matrixTensor(prefix + std::string(kTrellisScalesSuffix), io::DType::F16, {q.rows, groupsPerRow}, q.scales));
        out.push_back(byteTensor(prefix + std::string(kTrellisCodesSuffix), io::DType::U8,
                                 {q.rows, trellisCodeBytesPerRow(h)}, packTrellisSymbols(q)));
        return out;
    }

    nlohmann::json quantizationConfig(const ExportScheme& scheme) const override {
        return {
            {"quant_method", "quantscope-trellis"},
            {"format_version", 1},
            {"bits", sharedValue(scheme, [](const quant::QuantizedLinear& q) { return q.trellis.K; })},
            {"state_bits", sharedValue(scheme, [](const quant::QuantizedLinear& q) { return q.trellis.L; })},
            {"group_size", sharedValue(scheme, [](const quant::QuantizedLinear& q) { return q.trellis.groupSize; })},
            {"codebook", "qtip-1mad"},
            {"rotation", "hadamard-random-signs"},
            {"rotation_seed",
             sharedValue(scheme, [](const quant::QuantizedLinear& q) { return q.trellis.rotationSeed; })},
            {"scale_dtype", "float16"},
            {"modules_to_not_convert", scheme.denseLinears}};
    }

private:
    static EncodedTensor int64Tensor(std::string name, const std::vector<std::int64_t>& values) {
        EncodedTensor t{std::move(name), io::DType::I64, {static_cast<std::int64_t>(values.size())}, {}};
        t.bytes.resize(values.size() * sizeof(std::int64_t));
        std::memcpy(t.bytes.data(), values.data(), t.bytes.size());  // little-endian host, as the readers assume
        return t;
    }

    static EncodedTensor startsTensor(const std::string& prefix, const quant::QuantizedLinear& q,
                                      std::int64_t groupsPerRow) {
        EncodedTensor t{prefix + std::string(kTrellisStartsSuffix), io::DType::U16, {q.rows, groupsPerRow}, {}};
        t.bytes.resize(q.trellis.starts.size() * 2);
        for (std::size_t i = 0; i < q.trellis.starts.size(); ++i) {
            t.bytes[2 * i] = static_cast<std::byte>(q.trellis.starts[i] & 0xFFu);
            t.bytes[2 * i + 1] = static_cast<std::byte>(q.trellis.starts[i] >> 8);
        }
        return t;
    }
};

}  // namespace

const LinearEncoder& trellisEncoder() {
    static const TrellisEncoder encoder;
    return encoder;
}

}  // namespace qs::formats::detail
