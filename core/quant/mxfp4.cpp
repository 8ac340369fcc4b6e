#include "qs/quant/mxfp4.h"

#include <algorithm>
#include <cmath>

#include "fp4_blocks.h"
#include "fp_codes.h"

namespace qs::quant {
namespace {

// floor(log2(amax)) - 2 from the float's exponent field (ilogb is exact where a log2 in floating
// point can round up to the next integer just below a power of two).
int sharedExponent(float amax) {
    const float floored = std::max(amax, 0x1p-126f);
    return std::clamp(std::ilogb(floored) - 2, -127, 127);
}

}  // namespace

QuantizedLinear quantizeMxfp4(const MatrixF& w) {
    const std::int64_t rows = w.rows(), cols = w.cols();
    const std::int64_t blocks = (cols + kMxfp4BlockSize - 1) / kMxfp4BlockSize;
    QuantizedLinear q;
    q.method = Method::Mxfp4;
    q.codeKind = CodeKind::E2M1;
    q.rows = rows;
    q.cols = cols;
    q.bits = 4;
    q.symmetric = true;
    q.groupSize = kMxfp4BlockSize;
    q.blockRows = 1;
    q.blockCols = kMxfp4BlockSize;
    q.codes.resize(static_cast<std::size_t>(rows * cols));
    q.scales.resize(rows, blocks);
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
        const float* row = w.data() + r * cols;
        std::uint8_t* codes = q.codes.data() + r * cols;
        for (std::int64_t b = 0; b < blocks; ++b) {
            const std::int64_t c0 = b * kMxfp4BlockSize, c1 = std::min(cols, c0 + kMxfp4BlockSize);
            const int e = sharedExponent(detail::rangeAmax(row, c0, c1));
            q.scales(r, b) = std::ldexp(1.0f, e);
            // Multiplying by the exact power of two 2^-e rounds exactly like the seed's division.
            const float inverse = std::ldexp(1.0f, -e);
#pragma omp simd
            for (std::int64_t c = c0; c < c1; ++c) codes[c] = detail::encodeE2m1(row[c] * inverse);
        }
    }
    return q;
}

MatrixF dequantizeMxfp4(const QuantizedLinear& q) { return detail::dequantizeE2m1Blocks(q, "dequantizeMxfp4"); }

std::vector<std::uint8_t> mxfp4ScaleBytes(const QuantizedLinear& q) {
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(q.scales.size()));
    for (std::int64_t i = 0; i < q.scales.size(); ++i)
        bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(std::ilogb(q.scales.data()[i]) + 127);
    return bytes;
}

}  // namespace qs::quant
