#include "qs/quant/mxfp4.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "fp4_blocks.h"
#include "fp_codes.h"

namespace qs::quant {
namespace {

// floor(log2(amax)) - 2, read from the float's exponent field: exact, where a floating-point log2
// can round up to the next integer just below a power of two, and far cheaper than libm per block.
int sharedExponent(float amax) {
    const float floored = std::max(amax, 0x1p-126f);  // a normal float: the field is the exponent
    const int exponent = static_cast<int>((std::bit_cast<std::uint32_t>(floored) >> 23) & 0xFFu) - 127;
    return std::clamp(exponent - 2, -127, 127);
}

// 2^k for k in [-127, 127], built from bits (2^-127 is the one subnormal).
float powerOfTwo(int k) {
    return k >= -126 ? std::bit_cast<float>(static_cast<std::uint32_t>(k + 127) << 23) : 0x1p-127f;
}

// One block: the shared exponent from its amax, then the codes. Multiplying by the exact power of
// two 2^-e rounds exactly like the reference quantize_mxfp4's division.
template <int N>
float encodeBlock(const float* x, std::int64_t n, std::uint8_t* codes) {
    const int e = sharedExponent(n == N ? detail::absMaxFixed<N>(x) : detail::absMax(x, n));
    const float inverse = powerOfTwo(-e);
    if (n == N) {  // a full block: fixed trip count, unrolled
#pragma omp simd
        for (int c = 0; c < N; ++c) codes[c] = detail::encodeE2m1(x[c] * inverse);
    } else {
        for (std::int64_t c = 0; c < n; ++c) codes[c] = detail::encodeE2m1(x[c] * inverse);
    }
    return powerOfTwo(e);
}

void quantizeRow(const float* row, std::int64_t cols, float* scales, std::uint8_t* codes) {
    constexpr std::int64_t B = kMxfp4BlockSize;
    for (std::int64_t c0 = 0, b = 0; c0 < cols; c0 += B, ++b)
        scales[b] = encodeBlock<B>(row + c0, std::min(B, cols - c0), codes + c0);
}

}  // namespace

QuantizedLinear quantizeMxfp4(const MatrixF& w) {
    const std::int64_t rows = w.rows(), cols = w.cols();
    const std::int64_t blocks = (cols + kMxfp4BlockSize - 1) / kMxfp4BlockSize;
    QuantizedLinear q = QuantizedLinear::fp4(Method::Mxfp4, rows, cols, kMxfp4BlockSize);
    q.allocateParts();  // scales [rows, blocks]
    // q.scales is row-major [rows, blocks]: row r's scales are contiguous.
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r)
        quantizeRow(w.data() + r * cols, cols, q.scales.data() + r * blocks, q.codes.data() + r * cols);
    return q;
}

void dequantizeMxfp4(const QuantizedLinear& q, float* out) { detail::dequantizeE2m1Blocks(q, out, "dequantizeMxfp4"); }

MatrixF dequantizeMxfp4(const QuantizedLinear& q) {
    MatrixF w(q.rows, q.cols);
    dequantizeMxfp4(q, w.data());
    return w;
}

std::vector<std::uint8_t> mxfp4ScaleBytes(const QuantizedLinear& q) {
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(q.scales.size()));
    for (std::int64_t i = 0; i < q.scales.size(); ++i)
        bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(std::ilogb(q.scales.data()[i]) + 127);
    return bytes;
}

}  // namespace qs::quant
