#include "int_grid_check.h"

#include <cmath>

namespace qs::formats::detail {

namespace {

constexpr float kF16Max = 65504.0f;

std::string codeRangeProblem(const quant::QuantizedLinear& q) {
    const unsigned limit = 1u << q.bits;
    for (const std::uint8_t code : q.codes)
        if (code >= limit)
            return "code " + std::to_string(code) + " does not fit in " + std::to_string(q.bits) + " bits";
    return "";
}

std::string zeroProblem(const quant::QuantizedLinear& q) {
    const float maxq = static_cast<float>((1 << q.bits) - 1);
    for (Eigen::Index i = 0; i < q.zeros.size(); ++i) {
        const float z = q.zeros.data()[i];
        if (!(z >= 0.0f && z <= maxq) || z != std::nearbyint(z))
            return "zero point " + std::to_string(z) + " is not an integer in 0.." +
                   std::to_string(static_cast<int>(maxq));
    }
    return "";
}

std::string scaleProblem(const quant::QuantizedLinear& q) {
    for (Eigen::Index i = 0; i < q.scales.size(); ++i) {
        const float s = q.scales.data()[i];
        if (!std::isfinite(s) || std::fabs(s) > kF16Max)
            return "scale " + std::to_string(s) + " does not fit in the F16 the consumers store scales in";
    }
    return "";
}

}  // namespace

std::int64_t storedGroupSize(const quant::QuantizedLinear& q) { return q.groupSize == -1 ? q.cols : q.groupSize; }

std::string intGridProblem(const quant::QuantizedLinear& q) {
    if (q.codeKind != quant::CodeKind::UnsignedInt)
        return std::string(quant::methodName(q.method)) + " results are not integer codes with zero points";
    if (q.blockRows != 1) return "its scales cover " + std::to_string(q.blockRows) + " rows each, not one row";
    if (q.groupSize != -1 && q.groupSize <= 0) return "group size " + std::to_string(q.groupSize) + " is invalid";
    const std::int64_t g = storedGroupSize(q);
    if (q.gIdx.empty() && q.blockCols != g)
        return "its scale groups are " + std::to_string(q.blockCols) + " columns wide but its group size says " +
               std::to_string(g);
    const std::int64_t groups = (q.cols + g - 1) / g;
    if (q.codes.size() != static_cast<std::size_t>(q.rows * q.cols) || q.scales.rows() != q.rows ||
        q.scales.cols() != groups || q.zeros.rows() != q.rows || q.zeros.cols() != groups)
        return "its codes, scales and zeros do not fit a [" + std::to_string(q.rows) + ", " + std::to_string(q.cols) +
               "] weight in groups of " + std::to_string(g);
    for (const auto group : q.gIdx)
        if (group < 0 || group >= groups)
            return "g_idx names group " + std::to_string(group) + " of " + std::to_string(groups);
    if (auto p = codeRangeProblem(q); !p.empty()) return p;
    if (auto p = zeroProblem(q); !p.empty()) return p;
    return scaleProblem(q);
}

std::string groupDivisionProblem(const quant::QuantizedLinear& q) {
    if (q.groupSize == -1 || q.cols % q.groupSize == 0) return "";
    return "K=" + std::to_string(q.cols) + " is not a multiple of group size " + std::to_string(q.groupSize);
}

}  // namespace qs::formats::detail
