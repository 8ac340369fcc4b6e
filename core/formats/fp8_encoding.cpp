#include "fp8_encoding.h"

#include <cmath>

#include "tensor_encoding.h"

namespace qs::formats::detail {

std::string fp8CodesProblem(const quant::QuantizedLinear& q) {
    if (q.codeKind != quant::CodeKind::E4M3)
        return std::string(quant::methodName(q.method)) + " results are not FP8 E4M3 codes";
    if (q.codes.size() != static_cast<std::size_t>(q.rows * q.cols) || q.blockRows <= 0 || q.blockCols <= 0 ||
        q.scales.rows() != (q.rows + q.blockRows - 1) / q.blockRows ||
        q.scales.cols() != (q.cols + q.blockCols - 1) / q.blockCols)
        return "its codes and scales do not fit a [" + std::to_string(q.rows) + ", " + std::to_string(q.cols) +
               "] weight";
    if (!q.gIdx.empty()) return "FP8 layouts have no g_idx";
    for (Eigen::Index i = 0; i < q.scales.size(); ++i) {
        const float s = q.scales.data()[i];
        if (!std::isfinite(s) || s <= 0.0f) return "scale " + std::to_string(s) + " is not a finite positive number";
    }
    return "";
}

bool fp8PerTensor(const quant::QuantizedLinear& q) { return q.scales.rows() == 1 && q.scales.cols() == 1; }

bool fp8PerChannel(const quant::QuantizedLinear& q) {
    return q.blockRows == 1 && q.scales.rows() == q.rows && q.scales.cols() == 1;
}

bool fp8Blocks128(const quant::QuantizedLinear& q) { return q.blockRows == 128 && q.blockCols == 128; }

EncodedTensor fp8WeightTensor(const std::string& prefix, const quant::QuantizedLinear& q) {
    return byteTensor(prefix + ".weight", io::DType::F8_E4M3, {q.rows, q.cols}, q.codes);
}

}  // namespace qs::formats::detail
