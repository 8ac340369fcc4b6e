#include "scale_grid.h"

#include "tensor_access.h"

namespace qs::formats::detail {

namespace {

ScaleGrid grid(const io::TensorView& scale, std::int64_t gridRows, std::int64_t gridCols, std::int64_t blockRows,
               std::int64_t blockCols, std::string granularity) {
    ScaleGrid g;
    g.scales = Eigen::Map<const MatrixF>(scale.toF32().data(), gridRows, gridCols);
    g.blockRows = static_cast<int>(blockRows);
    g.blockCols = static_cast<int>(blockCols);
    g.granularity = std::move(granularity);
    return g;
}

}  // namespace

ScaleGrid readScaleGrid(const io::Checkpoint& checkpoint, const io::TensorView& scale, std::int64_t rows,
                        std::int64_t cols, const ScaleHint& hint) {
    requireDtype(checkpoint, scale,
                 {io::DType::F32, io::DType::F16, io::DType::BF16, io::DType::F8_E8M0, io::DType::F8_E4M3});
    const auto& s = scale.shape();
    if (isScalar(scale)) return grid(scale, 1, 1, rows, cols, "tensor");
    if ((s.size() == 1 && s[0] == rows) || (s.size() == 2 && s[0] == rows && s[1] == 1))
        return grid(scale, rows, 1, 1, cols, "channel");
    if (hint.block) {
        const auto [bn, bk] = *hint.block;
        // The config readers refuse such blocks; a zero here would divide by zero in every decoder.
        if (bn <= 0 || bk <= 0)
            failTensor(checkpoint, scale.name(),
                       "block size " + std::to_string(bn) + "x" + std::to_string(bk) + " is not positive");
        requireShape(checkpoint, scale, {ceilDiv(rows, bn), ceilDiv(cols, bk)},
                     "one scale per " + std::to_string(bn) + "x" + std::to_string(bk) + " block of a [" +
                         std::to_string(rows) + ", " + std::to_string(cols) + "] weight");
        return grid(scale, s[0], s[1], bn, bk, "block");
    }
    if (hint.groupSize > 0) {
        requireShape(checkpoint, scale, {rows, ceilDiv(cols, hint.groupSize)},
                     "one scale per group of " + std::to_string(hint.groupSize) + " inputs of a [" +
                         std::to_string(rows) + ", " + std::to_string(cols) + "] weight");
        return grid(scale, s[0], s[1], 1, hint.groupSize, "group");
    }
    failTensor(checkpoint, scale.name(),
               "shape " + shapeText(s) + " is neither per tensor, per channel, per group nor per block of a [" +
                   std::to_string(rows) + ", " + std::to_string(cols) + "] weight");
}

}  // namespace qs::formats::detail
