#pragma once
// The per-column arithmetic of the CPU's GPTQ loop (cpu_gptq_solver.cpp) on a chunk of rows: quantize
// one column and push its δ onto the block's later columns. Plain loops that GCC vectorises, compiled
// twice: for the plain x86-64 of the package's build, and for AVX2 where the CPU has it
// (qs/cpu_features.h). The AVX2 copy is compiled without FMA, so both round every product and every
// sum alike: the same codes on every CPU.
#include <cstdint>

namespace qs::quant {

struct GptqColumn {
    const float* w = nullptr;      // the original weights of the column
    const float* acc = nullptr;    // Σ δ_i M_ij of the columns done
    const float* scale = nullptr;  // the rows' grids
    const float* zero = nullptr;
    float mjj = 1.0f;  // M's diagonal element
    float maxq = 15.0f;
    std::int64_t rows = 0;
    std::uint8_t* codes = nullptr;  // out
    float* delta = nullptr;         // out: w - q
    float* error = nullptr;         // out: (corrected w - q) · M_jj
};
void quantizeGptqColumn(const GptqColumn& c);

// a[:, j] += d · m[j] for j < count: a is column-major, `rows` rows, leading dimension lda.
void pushColumnError(float* a, std::int64_t lda, std::int64_t rows, const float* d, const float* m, std::int64_t count);

namespace detail {
void quantizeGptqColumnPortable(const GptqColumn& c);
void quantizeGptqColumnAvx2(const GptqColumn& c);
void pushColumnErrorPortable(float* a, std::int64_t lda, std::int64_t rows, const float* d, const float* m,
                             std::int64_t count);
void pushColumnErrorAvx2(float* a, std::int64_t lda, std::int64_t rows, const float* d, const float* m,
                         std::int64_t count);
}  // namespace detail

}  // namespace qs::quant
