#include "fp4_weight.h"

#include "qs/io/dtype.h"

namespace qs::formats::detail {

DecodedLinear decodeFp4Blocks(const LinearRef& ref, const Fp4Blocks& b) {
    DecodedLinear d;
    d.ref = ref;
    d.quantized = true;
    d.weight.resize(b.rows, b.cols);
    auto& q = d.parts;
    q = quant::QuantizedLinear::fp4(b.method, b.rows, b.cols, b.blockSize);
    q.codes.resize(static_cast<std::size_t>(b.rows * b.cols));
    for (std::int64_t r = 0; r < b.rows; ++r)
        for (std::int64_t c = 0; c < b.cols; ++c) {
            const std::uint8_t byte = b.packed[r * (b.cols / 2) + c / 2];
            const std::uint8_t code = (c % 2 == 0) ? (byte & 0x0F) : (byte >> 4);
            q.codes[static_cast<std::size_t>(r * b.cols + c)] = code;
            d.weight(r, c) = io::e2m1ToF32(code) * b.effectiveScales(r, c / b.blockSize);
        }
    q.scales = b.storedScales;
    q.globalScale = b.globalScale;
    return d;
}

}  // namespace qs::formats::detail
