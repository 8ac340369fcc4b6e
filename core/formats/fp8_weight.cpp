#include "fp8_weight.h"

#include "codecs.h"
#include "tensor_access.h"

namespace qs::formats::detail {

void requireFp8Weight(const io::Checkpoint& checkpoint, const io::TensorView& weight) {
    requireDtype(checkpoint, weight, {io::DType::F8_E4M3});
    requireRank(checkpoint, weight, 2);
}

DecodedLinear decodeScaledFp8(const io::Checkpoint& checkpoint, const LinearRef& ref, const io::TensorView& weight,
                              ScaleGrid grid) {
    const std::int64_t rows = weight.shape()[0], cols = weight.shape()[1];
    const std::uint8_t* bytes = bytePointer(weight);
    DecodedLinear d;
    d.ref = ref;
    d.quantized = true;
    d.weight.resize(rows, cols);
    auto& q = d.parts;
    q = quant::QuantizedLinear::fp8(rows, cols, grid.blockRows, grid.blockCols,
                                    grid.granularity == "group" || grid.granularity == "block" ? grid.blockCols : -1);
    q.codes.assign(bytes, bytes + rows * cols);
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
            d.weight(r, c) = io::e4m3ToF32(bytes[r * cols + c]) * grid.scales(r / grid.blockRows, c / grid.blockCols);
    q.scales = std::move(grid.scales);
    d.bias = readBias(checkpoint, ref, rows);
    return d;
}

LayerQuantInfo describeScaledFp8(const LinearRef& ref, std::string codec, std::int64_t rows, std::int64_t cols,
                                 const ScaleGrid& grid) {
    LayerQuantInfo info;
    info.ref = ref;
    info.codec = std::move(codec);
    info.scheme = "fp8";
    info.bits = 8;
    info.groupSize = grid.granularity == "group" || grid.granularity == "block" ? grid.blockCols : -1;
    info.blockRows = grid.blockRows;
    info.granularity = grid.granularity;
    info.symmetric = true;
    info.rows = rows;
    info.cols = cols;
    return info;
}

}  // namespace qs::formats::detail
