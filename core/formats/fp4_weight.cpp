#include "fp4_weight.h"

namespace qs::formats::detail {

DecodedLinear decodeFp4Blocks(const LinearRef& ref, const Fp4Blocks& b) {
    DecodedLinear d;
    d.ref = ref;
    d.quantized = true;
    auto& q = d.parts;
    q = quant::QuantizedLinear::fp4(b.method, b.rows, b.cols, b.blockSize);
    q.codes.resize(static_cast<std::size_t>(b.rows * b.cols));
    for (std::int64_t r = 0; r < b.rows; ++r)
        for (std::int64_t c = 0; c < b.cols; ++c) {
            const std::uint8_t byte = b.packed[r * (b.cols / 2) + c / 2];
            q.codes[static_cast<std::size_t>(r * b.cols + c)] = (c % 2 == 0) ? (byte & 0x0F) : (byte >> 4);
        }
    q.scales = b.storedScales;
    q.globalScale = b.globalScale;
    d.weight = q.dequantize();
    return d;
}

}  // namespace qs::formats::detail
