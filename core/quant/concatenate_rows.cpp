#include "qs/quant/concatenate_rows.h"

#include <algorithm>

#include "qs/error.h"
#include "qs/io/dtype.h"
#include "qs/quant/fp8.h"

namespace qs::quant {
namespace {

[[noreturn]] void refuse(const std::string& fusedName, const std::string& why) {
    throw Error("cannot write " + fusedName + " fused: " + why);
}

// One scale per tensor: the scales block covers all rows of the part.
bool perTensorScale(const QuantizedLinear& q) { return q.blockRows == q.rows && q.scales.rows() == 1 && q.rows > 1; }

// The header and the per-input parts the fused tensor shares.
void requireAlike(const QuantizedLinear& first, const QuantizedLinear& q, const std::string& fusedName) {
    const auto differs = [&](const char* what) { refuse(fusedName, std::string("its parts differ in ") + what); };
    if (q.method != first.method || q.codeKind != first.codeKind) differs("method");
    if (q.cols != first.cols) differs("input features");
    if (q.bits != first.bits || q.groupSize != first.groupSize || q.symmetric != first.symmetric ||
        q.blockCols != first.blockCols)
        differs("bits, group size or symmetry");
    if (q.gIdx != first.gIdx) differs("act-order group indices (g_idx)");
    if (q.inputScales != first.inputScales) differs("AWQ input scales");
    if (!(q.input == first.input)) differs("activation quantization");
    if (q.ggmlType != first.ggmlType) differs("ggml type");
    if (q.trellis.L != first.trellis.L || q.trellis.K != first.trellis.K ||
        q.trellis.groupSize != first.trellis.groupSize || q.trellis.rotationSeed != first.trellis.rotationSeed)
        differs("trellis parameters");
    if (q.globalScale != first.globalScale) differs("NVFP4 global scale (vLLM loads one per fused tensor)");
    if (!q.scaleCodes.empty()) refuse(fusedName, "NF4 double quantization stores its scales per tensor");
    if (q.cacheScale > 0.0f) refuse(fusedName, "a quantized KV cache scale belongs to k_proj / v_proj apart");
    const bool tensorScaled = perTensorScale(q) && q.codeKind == CodeKind::E4M3;
    if (!tensorScaled && q.rows % q.blockRows != 0) differs("scale blocks (a block of rows spans two parts)");
}

// FP8 per tensor: every part re-encoded on the largest scale (dequantize with its own, quantize with the max).
void requantizeToScale(QuantizedLinear& q, float scale) {
    const float own = q.scales(0, 0);
    if (own == scale) return;
    std::vector<float> values(q.codes.size());
    for (std::size_t i = 0; i < q.codes.size(); ++i) values[i] = io::e4m3ToF32(q.codes[i]) * own;
    encodeE4m3Scaled(values.data(), static_cast<std::int64_t>(values.size()), scale, q.codes.data());
    q.scales(0, 0) = scale;
}

}  // namespace

QuantizedLinear concatenateRows(const std::vector<const QuantizedLinear*>& parts, const std::string& fusedName) {
    if (parts.empty()) refuse(fusedName, "it has no parts");
    const QuantizedLinear& first = *parts.front();
    for (const QuantizedLinear* q : parts) requireAlike(first, *q, fusedName);
    const bool tensorScaled = first.codeKind == CodeKind::E4M3 && perTensorScale(first);
    float maxScale = 0.0f;
    if (tensorScaled)
        for (const QuantizedLinear* q : parts) maxScale = std::max(maxScale, q->scales(0, 0));

    QuantizedLinear out = first;
    out.rows = 0;
    for (const QuantizedLinear* q : parts) out.rows += q->rows;
    out.codes.clear();
    out.blocks.clear();
    out.trellis.starts.clear();
    Eigen::Index scaleRows = 0;
    for (const QuantizedLinear* q : parts) scaleRows += q->scales.rows();
    if (tensorScaled) {
        out.blockRows = static_cast<int>(out.rows);
        out.scales = MatrixF::Constant(1, 1, maxScale);
    } else if (first.scales.size() > 0) {
        out.scales.resize(scaleRows, first.scales.cols());
        if (first.zeros.size() > 0) out.zeros.resize(scaleRows, first.zeros.cols());
    }
    Eigen::Index row = 0;
    for (const QuantizedLinear* part : parts) {
        QuantizedLinear q = *part;
        if (tensorScaled) requantizeToScale(q, maxScale);
        out.codes.insert(out.codes.end(), q.codes.begin(), q.codes.end());
        out.blocks.insert(out.blocks.end(), q.blocks.begin(), q.blocks.end());
        out.trellis.starts.insert(out.trellis.starts.end(), q.trellis.starts.begin(), q.trellis.starts.end());
        if (!tensorScaled && q.scales.size() > 0) {
            out.scales.middleRows(row, q.scales.rows()) = q.scales;
            if (q.zeros.size() > 0) out.zeros.middleRows(row, q.zeros.rows()) = q.zeros;
            row += q.scales.rows();
        }
    }
    // Measurements of the parts do not add up to one of the whole.
    out.outputError = out.gptqLoss = out.outputMse = std::numeric_limits<double>::quiet_NaN();
    out.seconds = 0.0;
    for (const QuantizedLinear* q : parts) out.seconds += q->seconds;
    return out;
}

}  // namespace qs::quant
