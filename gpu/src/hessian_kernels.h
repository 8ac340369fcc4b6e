#pragma once
// The element-wise halves of the Hessian accumulation (the product itself is cuBLAS SYRK), and the
// column sums of squares that give its diagonal alone.
#include <cstdint>

#include <cuda_runtime.h>

namespace qs::gpu::kernels {

// sum[lower] += chunk[lower], both column-major [f, f]; the chunk's f32 gram is widened to f64.
void addLowerToSum(const float* chunk, std::int64_t f, double* sum, cudaStream_t stream = nullptr);
// absSum[j] += |x[t, j]| for t = 0 .. n-1 in order, in f64 (x row-major [n, f]), as the CPU does.
void addAbsColumns(const float* x, std::int64_t n, std::int64_t f, double* absSum, cudaStream_t stream = nullptr);
// squareSum[j] += x[t, j]² for t = 0 .. n-1 in order, in f64 (x row-major [n, f]): the Hessian's
// diagonal alone. A float squared is exact in f64, so the sums are the CPU's bit for bit.
void addSquaredColumns(const float* x, std::int64_t n, std::int64_t f, double* squareSum,
                       cudaStream_t stream = nullptr);

}  // namespace qs::gpu::kernels
