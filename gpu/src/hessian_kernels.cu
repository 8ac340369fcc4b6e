#include "cuda_check.h"
#include "hessian_kernels.h"
#include "launch.h"

namespace qs::gpu::kernels {
namespace {

__global__ void addLowerKernel(const float* chunk, std::int64_t f, double* sum) {
    const std::int64_t n = f * f;
    for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t col = i / f, row = i % f;
        if (row >= col) sum[i] += static_cast<double>(chunk[i]);
    }
}

__global__ void absColumnsKernel(const float* x, std::int64_t n, std::int64_t f, double* absSum) {
    for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < f;
         j += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        double s = absSum[j];
        for (std::int64_t t = 0; t < n; ++t) s += static_cast<double>(fabsf(x[t * f + j]));
        absSum[j] = s;
    }
}

__global__ void squaredColumnsKernel(const float* x, std::int64_t n, std::int64_t f, double* squareSum) {
    for (std::int64_t j = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; j < f;
         j += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        double s = squareSum[j];
        for (std::int64_t t = 0; t < n; ++t) {
            const double v = static_cast<double>(x[t * f + j]);
            s += v * v;
        }
        squareSum[j] = s;
    }
}

}  // namespace

void addLowerToSum(const float* chunk, std::int64_t f, double* sum, cudaStream_t stream) {
    addLowerKernel<<<gridFor(f * f), kThreads, 0, stream>>>(chunk, f, sum);
    QS_CUDA_LAUNCHED("addLowerKernel");
}

void addAbsColumns(const float* x, std::int64_t n, std::int64_t f, double* absSum, cudaStream_t stream) {
    absColumnsKernel<<<gridFor(f), kThreads, 0, stream>>>(x, n, f, absSum);
    QS_CUDA_LAUNCHED("absColumnsKernel");
}

void addSquaredColumns(const float* x, std::int64_t n, std::int64_t f, double* squareSum, cudaStream_t stream) {
    squaredColumnsKernel<<<gridFor(f), kThreads, 0, stream>>>(x, n, f, squareSum);
    QS_CUDA_LAUNCHED("squaredColumnsKernel");
}

}  // namespace qs::gpu::kernels
