#pragma once
// The element-wise halves of the AWQ α search on the device (the product D·H is one cuBLAS SGEMM).
#include <cstdint>

namespace qs::gpu::kernels {

// For candidate k (scales s + k * cols) and row r of w [rows, cols] row-major: d[k, r] = Q(w_r · s)/s − w_r,
// Q the round-to-nearest of rtn.cpp quantizeGroupRtn on AutoAWQ's grid (no clip), per group of
// groupCols columns (a last partial group allowed). d is [candidates * rows, cols] row-major.
struct AwqFakeQuantArgs {
    const float* w;
    const float* s;  // [candidates, cols]
    float* d;
    std::int64_t candidates;
    std::int64_t rows;
    std::int64_t cols;
    std::int64_t groupCols;
    int bits;
    bool sym;
};
void awqFakeQuantError(const AwqFakeQuantArgs& args);

// out[m] = ½ Σ_c dh[m, c] · d[m, c] in f64 (output_error.cpp hessianQuadraticRows), both [rows, cols] row-major.
void halfRowDots(const float* dh, const float* d, std::int64_t rows, std::int64_t cols, double* out);

}  // namespace qs::gpu::kernels
