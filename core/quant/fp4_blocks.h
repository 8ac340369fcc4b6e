#pragma once
// Decoding shared by the two E2M1 block formats (MXFP4, NVFP4): w = e2m1(code) * (scale * global),
// with the block's scale product formed first, as the reference dequantizers do (docs/reference-algorithms.md).
#include <algorithm>
#include <cstdint>
#include <string>

#include "qs/error.h"
#include "qs/matrix.h"
#include "qs/quant/quantized_linear.h"

#include "fp_codes.h"

namespace qs::quant::detail {

inline void dequantizeE2m1Blocks(const QuantizedLinear& q, float* w, const char* who) {
    if (q.codeKind != CodeKind::E2M1 || q.blockCols <= 0 || q.blockRows != 1 ||
        q.codes.size() != static_cast<std::size_t>(q.rows * q.cols))
        throw Error(std::string(who) + ": not an E2M1 block QuantizedLinear");
    const std::int64_t cols = q.cols, block = q.blockCols;
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < q.rows; ++r) {
        const std::uint8_t* codes = q.codes.data() + r * cols;
        float* out = w + r * cols;
        for (std::int64_t c0 = 0, b = 0; c0 < cols; c0 += block, ++b) {
            const std::int64_t c1 = std::min(cols, c0 + block);
            const float scale = q.scales(r, b) * q.globalScale;
#pragma omp simd
            for (std::int64_t c = c0; c < c1; ++c) out[c] = kE2m1Values[codes[c] & 0xF] * scale;
        }
    }
}

}  // namespace qs::quant::detail
