#include "qs/quant/nvfp4.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

#include "qs/cpu_features.h"
#include "qs/error.h"

#include "fp4_blocks.h"
#include "fp_codes.h"

namespace qs::quant {
namespace {

// The stored E4M3 block scale, as f32. The two divisions are the reference quantize_nvfp4's, in its order.
float blockScale(float blockAmax, float tensorScale, const std::array<float, 256>& e4m3) {
    const float ideal = std::min(blockAmax / 6.0f / tensorScale, detail::kE4m3Max);
    return e4m3[detail::encodeE4m3(ideal)];
}

// One block's codes: x / scale rounded to E2M1; a scale that rounded to zero gives all-zero codes.
template <int N>
void encodeBlock(const float* x, std::int64_t n, float scale, std::uint8_t* codes) {
    if (!(scale > 0.0f)) {
        std::fill(codes, codes + n, std::uint8_t{0});
    } else if (n == N) {  // a full block: fixed trip count, unrolled
#pragma omp simd
        for (int c = 0; c < N; ++c) codes[c] = detail::encodeE2m1(x[c] / scale);
    } else {
        for (std::int64_t c = 0; c < n; ++c) codes[c] = detail::encodeE2m1(x[c] / scale);
    }
}

#if QS_X86
[[gnu::target("avx2")]] void wholeBlockAmaxesAvx2(const float* row, std::int64_t full, float* scales) {
    for (std::int64_t b = 0; b < full; ++b) scales[b] = detail::absMax16(row + b * kNvfp4BlockSize);
}
#endif

// Whole blocks' amaxes into scales[0, full), on AVX2 where the CPU runs it.
void wholeBlockAmaxes(const float* row, std::int64_t full, float* scales) {
#if QS_X86
    if (cpuRunsAvx2()) {
        wholeBlockAmaxesAvx2(row, full, scales);
        return;
    }
#endif
    for (std::int64_t b = 0; b < full; ++b) scales[b] = detail::absMaxFixed<kNvfp4BlockSize>(row + b * kNvfp4BlockSize);
}

// Pass 1, row r: every block's amax into `scales` (raw, converted in pass 2); returns the row's amax.
float blockAmaxes(const float* row, std::int64_t cols, float* scales) {
    constexpr std::int64_t B = kNvfp4BlockSize;
    const std::int64_t full = cols / B;
    wholeBlockAmaxes(row, full, scales);
    const std::int64_t blocks = (cols + B - 1) / B;
    if (full < blocks) scales[full] = detail::absMax(row + full * B, cols - full * B);
    std::uint32_t rowMax = 0;
    for (std::int64_t b = 0; b < blocks; ++b) rowMax = std::max(rowMax, std::bit_cast<std::uint32_t>(scales[b]));
    return std::bit_cast<float>(rowMax);
}

#if QS_X86
// The codes of whole blocks two at a time (32 codes, one 256-bit store), up to the last whole pair;
// a pair with a zero scale goes the portable way. Returns the first block it left.
[[gnu::target("avx2")]] std::int64_t encodeBlockPairsAvx2(const float* row, std::int64_t full, const float* scales,
                                                          float tensorScale, std::uint8_t* codes) {
    constexpr std::int64_t B = kNvfp4BlockSize;
    std::int64_t b = 0;
    for (; b + 1 < full; b += 2) {
        const float s0 = scales[b] * tensorScale, s1 = scales[b + 1] * tensorScale;
        const float* x = row + b * B;
        if (!(s0 > 0.0f) || !(s1 > 0.0f)) {
            encodeBlock<B>(x, B, s0, codes + b * B);
            encodeBlock<B>(x + B, B, s1, codes + (b + 1) * B);
            continue;
        }
        const __m256 v0 = _mm256_set1_ps(s0), v1 = _mm256_set1_ps(s1);
        detail::storeCodes32(codes + b * B, detail::encodeE2m1x8(_mm256_div_ps(_mm256_loadu_ps(x), v0)),
                             detail::encodeE2m1x8(_mm256_div_ps(_mm256_loadu_ps(x + 8), v0)),
                             detail::encodeE2m1x8(_mm256_div_ps(_mm256_loadu_ps(x + 16), v1)),
                             detail::encodeE2m1x8(_mm256_div_ps(_mm256_loadu_ps(x + 24), v1)));
    }
    return b;
}
#endif

// Pass 2, row r: the block amaxes become E4M3 scales (one vectorised pass), then the codes.
void quantizeRow(const float* row, std::int64_t cols, float tensorScale, float* scales, std::uint8_t* codes) {
    const auto& e4m3 = detail::e4m3Table();
    constexpr std::int64_t B = kNvfp4BlockSize;
    const std::int64_t blocks = (cols + B - 1) / B;
#pragma omp simd
    for (std::int64_t b = 0; b < blocks; ++b) scales[b] = blockScale(scales[b], tensorScale, e4m3);
    std::int64_t b = 0;
#if QS_X86
    if (cpuRunsAvx2()) b = encodeBlockPairsAvx2(row, cols / B, scales, tensorScale, codes);
#endif
    for (; b < blocks; ++b)
        encodeBlock<B>(row + b * B, std::min(B, cols - b * B), scales[b] * tensorScale, codes + b * B);
}

}  // namespace

namespace {

// Pass 1 (block amaxes, and the tensor's amax when no scale is given), then pass 2 (scales and codes).
QuantizedLinear quantizeNvfp4Blocks(const MatrixF& w, float fixedTensorScale) {
    const std::int64_t rows = w.rows(), cols = w.cols();
    const std::int64_t blocks = (cols + kNvfp4BlockSize - 1) / kNvfp4BlockSize;
    QuantizedLinear q = QuantizedLinear::fp4(Method::Nvfp4, rows, cols, kNvfp4BlockSize);
    q.allocateParts();  // scales [rows, blocks]
    // q.scales is row-major [rows, blocks]: row r's scales are contiguous. Pass 1 reads the weight for
    // the block amaxes and the tensor's amax together (the tensor scale must be known before any code).
    float amax = 0.0f;
#pragma omp parallel for reduction(max : amax) schedule(static) if (rows * cols > (1 << 16))
    for (std::int64_t r = 0; r < rows; ++r)
        amax = std::max(amax, blockAmaxes(w.data() + r * cols, cols, q.scales.data() + r * blocks));
    // As the engines store it: the divisor 448·6 / amax (weight_global_scale), whose reciprocal is the
    // scale, so that the stored divisor decodes to exactly this scale (amax / 2688 need not have an f32
    // whose reciprocal it is).
    const float tensorScale = fixedTensorScale > 0.0f
                                  ? fixedTensorScale
                                  : 1.0f / (detail::kE4m3Max * detail::kE2m1Max / std::max(amax, 1e-12f));
    q.globalScale = tensorScale;
#pragma omp parallel for schedule(static) if (rows * cols > (1 << 16))
    for (std::int64_t r = 0; r < rows; ++r)
        quantizeRow(w.data() + r * cols, cols, tensorScale, q.scales.data() + r * blocks, q.codes.data() + r * cols);
    return q;
}

}  // namespace

QuantizedLinear quantizeNvfp4(const MatrixF& w) { return quantizeNvfp4Blocks(w, 0.0f); }

QuantizedLinear quantizeNvfp4(const MatrixF& w, float tensorScale) {
    if (!(tensorScale > 0.0f) || !std::isfinite(tensorScale))
        throw Error("quantizeNvfp4: the tensor scale must be positive and finite");
    return quantizeNvfp4Blocks(w, tensorScale);
}

void dequantizeNvfp4(const QuantizedLinear& q, float* out) { detail::dequantizeE2m1Blocks(q, out, "dequantizeNvfp4"); }

MatrixF dequantizeNvfp4(const QuantizedLinear& q) {
    MatrixF w(q.rows, q.cols);
    dequantizeNvfp4(q, w.data());
    return w;
}

}  // namespace qs::quant
