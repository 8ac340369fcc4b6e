#include "fp4_encoding.h"

#include <cmath>

#include "qs/io/dtype.h"
#include "qs/quant/nibbles.h"

#include "encoder_support.h"

namespace qs::formats::detail {

namespace {

bool exactInScaleType(float s, std::string_view kind) {
    if (!std::isfinite(s) || s < 0.0f) return false;
    if (kind == "E4M3") return io::e4m3ToF32(io::f32ToE4m3(s)) == s;
    return s > 0.0f && io::e8m0ToF32(io::f32ToE8m0(s)) == s;
}

std::string scaleProblem(const quant::QuantizedLinear& q, const Fp4Layout& layout) {
    for (Eigen::Index r = 0; r < q.scales.rows(); ++r)
        for (Eigen::Index b = 0; b < q.scales.cols(); ++b)
            if (const float s = q.scales(r, b); !exactInScaleType(s, layout.scaleKind))
                return "block scale (" + std::to_string(r) + ", " + std::to_string(b) + ") = " + std::to_string(s) +
                       " is not a non-negative " + std::string(layout.scaleKind) + " number";
    return "";
}

}  // namespace

std::string fp4Refusal(const quant::QuantizedLinear& q, const Fp4Layout& layout) {
    const std::string method(quant::methodName(layout.method)), block = std::to_string(layout.blockSize);
    if (q.method != layout.method || q.codeKind != quant::CodeKind::E2M1)
        return "it holds " + method + " results, and this linear was quantized with " +
               std::string(quant::methodName(q.method));
    if (q.rows <= 0 || q.cols <= 0) return "the weight " + shapeOf(q) + " is empty";
    if (q.cols % layout.blockSize != 0)
        return "in_features " + std::to_string(q.cols) + " is not a multiple of the " + method + " block size " + block;
    if (q.blockRows != 1 || q.blockCols != layout.blockSize || !q.gIdx.empty())
        return "its scales are not one per " + block + " consecutive inputs of a row";
    if (q.codes.size() != static_cast<std::size_t>(q.rows * q.cols) || q.scales.rows() != q.rows ||
        q.scales.cols() != q.cols / layout.blockSize)
        return "its codes and scales do not fit the weight " + shapeOf(q);
    for (const std::uint8_t c : q.codes)
        if (c > 15) return "a code " + std::to_string(c) + " is not a 4-bit E2M1 code";
    if (layout.method == quant::Method::Nvfp4 && !(std::isfinite(q.globalScale) && q.globalScale > 0.0f))
        return "its global scale " + std::to_string(q.globalScale) + " is not a positive number";
    if (layout.method == quant::Method::Mxfp4 && q.globalScale != 1.0f)
        return "MXFP4 has no global scale, and this linear has " + std::to_string(q.globalScale);
    return scaleProblem(q, layout);
}

std::vector<std::uint8_t> packE2m1Codes(const quant::QuantizedLinear& q) {
    // Rows have an even number of codes, so packing the flat codes packs every row on its own.
    return quant::packNibbles(q.codes, quant::NibbleOrder::EvenLow);
}

std::vector<std::uint8_t> e4m3ScaleBytes(const quant::QuantizedLinear& q) {
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(q.scales.size()));
    for (Eigen::Index i = 0; i < q.scales.size(); ++i)
        bytes[static_cast<std::size_t>(i)] = io::f32ToE4m3(q.scales.data()[i]);
    return bytes;
}

std::vector<std::uint8_t> e8m0ScaleBytes(const quant::QuantizedLinear& q) {
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(q.scales.size()));
    for (Eigen::Index i = 0; i < q.scales.size(); ++i)
        bytes[static_cast<std::size_t>(i)] = io::f32ToE8m0(q.scales.data()[i]);
    return bytes;
}

}  // namespace qs::formats::detail
