#include "gptq_column_kernels.h"

#include "qs/cpu_features.h"
#include "qs/quant/rtn.h"

namespace qs::quant {

namespace {

[[gnu::always_inline]] inline void quantizeColumnLoop(const GptqColumn& c) {
    // Locals, so that the stores cannot alias the description and the loop vectorises.
    const float* __restrict w = c.w;
    const float* __restrict acc = c.acc;
    const float* __restrict scale = c.scale;
    const float* __restrict zero = c.zero;
    std::uint8_t* __restrict codes = c.codes;
    float* __restrict delta = c.delta;
    float* __restrict error = c.error;
    const float mjj = c.mjj, inv = 1.0f / c.mjj, maxq = c.maxq;
    const std::int64_t rows = c.rows;
#pragma omp simd
    for (std::int64_t r = 0; r < rows; ++r) {
        const float corrected = w[r] + acc[r] * inv;
        const float q = quantizeCode(corrected, {scale[r], zero[r]}, maxq);
        const float dq = dequantizeCode(q, {scale[r], zero[r]});
        codes[r] = static_cast<std::uint8_t>(q);
        delta[r] = w[r] - dq;
        error[r] = (corrected - dq) * mjj;
    }
}

[[gnu::always_inline]] inline void pushColumnErrorLoop(float* a, std::int64_t lda, std::int64_t rows,
                                                       const float* __restrict d, const float* m, std::int64_t count) {
    for (std::int64_t j = 0; j < count; ++j) {
        float* col = a + j * lda;
        const float mj = m[j];
#pragma omp simd
        for (std::int64_t r = 0; r < rows; ++r) col[r] += d[r] * mj;
    }
}

}  // namespace

namespace detail {

void quantizeGptqColumnPortable(const GptqColumn& c) { quantizeColumnLoop(c); }

void pushColumnErrorPortable(float* a, std::int64_t lda, std::int64_t rows, const float* d, const float* m,
                             std::int64_t count) {
    pushColumnErrorLoop(a, lda, rows, d, m, count);
}

#if QS_X86
[[gnu::target("avx2")]] void quantizeGptqColumnAvx2(const GptqColumn& c) { quantizeColumnLoop(c); }

[[gnu::target("avx2")]] void pushColumnErrorAvx2(float* a, std::int64_t lda, std::int64_t rows, const float* d,
                                                 const float* m, std::int64_t count) {
    pushColumnErrorLoop(a, lda, rows, d, m, count);
}
#else
void quantizeGptqColumnAvx2(const GptqColumn& c) { quantizeColumnLoop(c); }

void pushColumnErrorAvx2(float* a, std::int64_t lda, std::int64_t rows, const float* d, const float* m,
                         std::int64_t count) {
    pushColumnErrorLoop(a, lda, rows, d, m, count);
}
#endif

}  // namespace detail

void quantizeGptqColumn(const GptqColumn& c) {
    if (cpuRunsAvx2())
        detail::quantizeGptqColumnAvx2(c);
    else
        detail::quantizeGptqColumnPortable(c);
}

void pushColumnError(float* a, std::int64_t lda, std::int64_t rows, const float* d, const float* m,
                     std::int64_t count) {
    if (cpuRunsAvx2())
        detail::pushColumnErrorAvx2(a, lda, rows, d, m, count);
    else
        detail::pushColumnErrorPortable(a, lda, rows, d, m, count);
}

}  // namespace qs::quant
