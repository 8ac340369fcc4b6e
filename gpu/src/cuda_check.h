#pragma once
// Every CUDA, cuBLAS and cuSOLVER status becomes a qs::Error naming the call that returned it.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

namespace qs::gpu {

void checkCuda(cudaError_t status, const char* call, const char* file, int line);
void checkCublas(cublasStatus_t status, const char* call, const char* file, int line);
void checkCusolver(cusolverStatus_t status, const char* call, const char* file, int line);
// After a kernel launch: the launch's own error (bad configuration, no device).
void checkLaunch(const char* kernel, const char* file, int line);

}  // namespace qs::gpu

#define QS_CUDA(call) ::qs::gpu::checkCuda((call), #call, __FILE__, __LINE__)
#define QS_CUBLAS(call) ::qs::gpu::checkCublas((call), #call, __FILE__, __LINE__)
#define QS_CUSOLVER(call) ::qs::gpu::checkCusolver((call), #call, __FILE__, __LINE__)
#define QS_CUDA_LAUNCHED(kernel) ::qs::gpu::checkLaunch(kernel, __FILE__, __LINE__)
