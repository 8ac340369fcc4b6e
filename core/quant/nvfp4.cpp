#include "qs/quant/nvfp4.h"

#include <algorithm>
#include <array>
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
float blockScale(float blockAmax, float tensorScale, const std::array<float, 256>& e4m3) {
    const float ideal = std::min(blockAmax / 6.0f / tensorScale, detail::kE4m3Max);
    return e4m3[detail::encodeE4m3(ideal)];
}

// One block's codes: x / scale rounded to E2M1; a scale that rounded to zero gives all-zero codes.
template <int N>
void encodeBlock(const float* x, std::int64_t n, float scale, std::uint8_t* codes) {
    if (!(scale > 0.0f)) {
        std::fill(codes, codes + n, std::uint8_t{0});
    } else if (n == N) {   // a full block: fixed trip count, unrolled
#pragma omp simd
        for (int c = 0; c < N; ++c) codes[c] = detail::encodeE2m1(x[c] / scale);
    } else {
        for (std::int64_t c = 0; c < n; ++c) codes[c] = detail::encodeE2m1(x[c] / scale);
    }
}

// Row r: every block's scale first (scalar work, one per 16 values), then the codes.
void quantizeRow(const float* row, std::int64_t cols, float tensorScale, float* scales, std::uint8_t* codes) {
    const auto& e4m3 = detail::e4m3Table();
    constexpr std::int64_t B = kNvfp4BlockSize;
    const std::int64_t full = cols / B;
    const std::int64_t blocks = (cols + B - 1) / B;
    for (std::int64_t b = 0; b < full; ++b) scales[b] = detail::absMaxFixed<B>(row + b * B);
    if (full < blocks) scales[full] = detail::absMax(row + full * B, cols - full * B);
#pragma omp simd
    for (std::int64_t b = 0; b < blocks; ++b) scales[b] = blockScale(scales[b], tensorScale, e4m3);
    for (std::int64_t c0 = 0, b = 0; c0 < cols; c0 += B, ++b)
        encodeBlock<B>(row + c0, std::min(B, cols - c0), scales[b] * tensorScale, codes + c0);
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
    // q.scales is row-major [rows, blocks]: row r's scales are contiguous.
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r)
        quantizeRow(w.data() + r * cols, cols, tensorScale, q.scales.data() + r * blocks, q.codes.data() + r * cols);
    return q;
}

void dequantizeNvfp4(const QuantizedLinear& q, float* out) { detail::dequantizeE2m1Blocks(q, out, "dequantizeNvfp4"); }

MatrixF dequantizeNvfp4(const QuantizedLinear& q) {
    MatrixF w(q.rows, q.cols);
    dequantizeNvfp4(q, w.data());
    return w;
}

}  // namespace qs::quant
