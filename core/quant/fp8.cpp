#include "qs/quant/fp8.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "qs/error.h"

#include "fp_codes.h"

namespace qs::quant {
namespace {

// One band of block rows: the amax of every block in one row-major sweep, then the codes in a
// second. Walking whole rows keeps the reads sequential, where tile by tile they stride.
void quantizeBand(const MatrixF& w, std::int64_t r0, std::int64_t r1, std::int64_t blockCols, QuantizedLinear& q,
                  std::int64_t band) {
    const std::int64_t cols = w.cols(), width = q.blockCols;
    std::vector<float> amax(static_cast<std::size_t>(blockCols), 0.0f);
    for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t bc = 0; bc < blockCols; ++bc) {
            const std::int64_t c0 = bc * width, c1 = std::min(cols, c0 + width);
            float& m = amax[static_cast<std::size_t>(bc)];
            m = std::max(m, detail::absMax(w.data() + r * cols + c0, c1 - c0));
        }
    for (std::int64_t bc = 0; bc < blockCols; ++bc)
        q.scales(band, bc) = fp8ScaleFor(amax[static_cast<std::size_t>(bc)]);
    for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t bc = 0; bc < blockCols; ++bc) {
            const std::int64_t c0 = bc * width, c1 = std::min(cols, c0 + width);
            encodeE4m3Scaled(w.data() + r * cols + c0, c1 - c0, q.scales(band, bc), q.codes.data() + r * cols + c0);
        }
}

}  // namespace

float fp8ScaleFor(float amax) {
    // Division, not multiplication by 1/448: the reference quantize_blocks (and transformers) divide, and the scale is
    // stored, so it must be the same float.
    return std::max(amax, 1e-12f) / detail::kE4m3Max;
}

void encodeE4m3Scaled(const float* in, std::int64_t count, float scale, std::uint8_t* out) {
    // x / scale, not x * (1 / scale): the reciprocal's rounding would move a few codes off the reference's.
#pragma omp simd
    for (std::int64_t i = 0; i < count; ++i) out[i] = detail::encodeE4m3(in[i] / scale);
}

QuantizedLinear fp8Layout(std::int64_t rows, std::int64_t cols, Fp8Scaling scaling, int block) {
    if (block <= 0) throw Error("quantizeFp8: block size must be positive, got " + std::to_string(block));
    const int wide = static_cast<int>(std::max<std::int64_t>(cols, 1)),
              tall = static_cast<int>(std::max<std::int64_t>(rows, 1));
    switch (scaling) {
        case Fp8Scaling::Block: break;
        case Fp8Scaling::PerChannel: return QuantizedLinear::fp8(rows, cols, 1, wide, -1);
        case Fp8Scaling::PerTensor: return QuantizedLinear::fp8(rows, cols, tall, wide, -1);
    }
    return QuantizedLinear::fp8(rows, cols, block, block, block);
}

QuantizedLinear quantizeFp8(const MatrixF& w, Fp8Scaling scaling, int block) {
    const std::int64_t rows = w.rows(), cols = w.cols();
    QuantizedLinear q = fp8Layout(rows, cols, scaling, block);
    q.allocateParts();
    const std::int64_t blockRows = q.scales.rows(), blockCols = q.scales.cols();

    if (scaling == Fp8Scaling::PerTensor) {
        // One band would run on one thread: take the amax in parallel, then encode rows in parallel.
        float amax = 0.0f;
#pragma omp parallel for reduction(max : amax) schedule(static)
        for (std::int64_t r = 0; r < rows; ++r) amax = std::max(amax, detail::absMax(w.data() + r * cols, cols));
        const float scale = fp8ScaleFor(amax);
        q.scales(0, 0) = scale;
#pragma omp parallel for schedule(static)
        for (std::int64_t r = 0; r < rows; ++r)
            encodeE4m3Scaled(w.data() + r * cols, cols, scale, q.codes.data() + r * cols);
        return q;
    }
#pragma omp parallel for schedule(static)
    for (std::int64_t br = 0; br < blockRows; ++br)
        quantizeBand(w, br * q.blockRows, std::min(rows, (br + 1) * q.blockRows), blockCols, q, br);
    return q;
}

MatrixF dequantizeFp8(const QuantizedLinear& q) {
    MatrixF w(q.rows, q.cols);
    dequantizeFp8(q, w.data());
    return w;
}

void dequantizeFp8(const QuantizedLinear& q, float* w) {
    if (q.codeKind != CodeKind::E4M3 || q.blockRows <= 0 || q.blockCols <= 0 ||
        q.codes.size() != static_cast<std::size_t>(q.rows * q.cols))
        throw Error("dequantizeFp8: not an FP8 QuantizedLinear");
    const auto& table = detail::e4m3Table();
    const std::int64_t cols = q.cols;
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < q.rows; ++r) {
        const std::uint8_t* codes = q.codes.data() + r * cols;
        float* out = w + r * cols;
        const std::int64_t br = r / q.blockRows;
        for (std::int64_t c0 = 0; c0 < cols; c0 += q.blockCols) {
            const std::int64_t c1 = std::min(cols, c0 + q.blockCols);
            const float scale = q.scales(br, q.groupOf(c0));
#pragma omp simd
            for (std::int64_t c = c0; c < c1; ++c) out[c] = table[codes[c]] * scale;
        }
    }
}

}  // namespace qs::quant
