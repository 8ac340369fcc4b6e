#include "qs/quant/nvfp4.h"

#include <algorithm>
#include <cmath>

#include "fp4_blocks.h"
#include "fp_codes.h"

namespace qs::quant {
namespace {

float tensorAmax(const MatrixF& w) {
    float amax = 0.0f;
#pragma omp parallel for reduction(max : amax) schedule(static)
    for (std::int64_t r = 0; r < w.rows(); ++r) amax = std::max(amax, detail::absMax(w.data() + r * w.cols(), w.cols()));
    return amax;
}

// The stored E4M3 block scale, as f32. The two divisions are the seed's, in its order.
float blockScale(float blockAmax, float tensorScale) {
    const float ideal = std::min(blockAmax / 6.0f / tensorScale, detail::kE4m3Max);
    return detail::e4m3Table()[detail::encodeE4m3(ideal)];
}

}  // namespace

QuantizedLinear quantizeNvfp4(const MatrixF& w) {
    const std::int64_t rows = w.rows(), cols = w.cols();
    const std::int64_t blocks = (cols + kNvfp4BlockSize - 1) / kNvfp4BlockSize;
    QuantizedLinear q;
    q.method = Method::Nvfp4;
    q.codeKind = CodeKind::E2M1;
    q.rows = rows;
    q.cols = cols;
    q.bits = 4;
    q.symmetric = true;
    q.groupSize = kNvfp4BlockSize;
    q.blockRows = 1;
    q.blockCols = kNvfp4BlockSize;
    q.codes.resize(static_cast<std::size_t>(rows * cols));
    q.scales.resize(rows, blocks);
    const float tensorScale = std::max(tensorAmax(w), 1e-12f) / (detail::kE4m3Max * detail::kE2m1Max);
    q.globalScale = tensorScale;
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
        const float* row = w.data() + r * cols;
        std::uint8_t* codes = q.codes.data() + r * cols;
        for (std::int64_t b = 0; b < blocks; ++b) {
            const std::int64_t c0 = b * kNvfp4BlockSize, c1 = std::min(cols, c0 + kNvfp4BlockSize);
            const float stored = blockScale(detail::absMax(row + c0, c1 - c0), tensorScale);
            q.scales(r, b) = stored;
            const float scale = stored * tensorScale;
            if (scale > 0.0f) {
#pragma omp simd
                for (std::int64_t c = c0; c < c1; ++c) codes[c] = detail::encodeE2m1(row[c] / scale);
            } else {
                std::fill(codes + c0, codes + c1, std::uint8_t{0});   // a block scale that rounded to zero
            }
        }
    }
    return q;
}

void dequantizeNvfp4(const QuantizedLinear& q, float* out) { detail::dequantizeE2m1Blocks(q, out, "dequantizeNvfp4"); }

MatrixF dequantizeNvfp4(const QuantizedLinear& q) {
    MatrixF w(q.rows, q.cols);
    dequantizeNvfp4(q, w.data());
    return w;
}

}  // namespace qs::quant
