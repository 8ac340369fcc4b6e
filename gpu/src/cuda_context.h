#pragma once
// The library handles of one CUDA backend (cuBLAS, cuSOLVER), created once and shared by its operations.
#include <memory>

#include <cublas_v2.h>
#include <cusolverDn.h>

namespace qs::gpu {

class CudaContext {
public:
    CudaContext();
    ~CudaContext();
    CudaContext(const CudaContext&) = delete;
    CudaContext& operator=(const CudaContext&) = delete;

    cublasHandle_t blas() const { return blas_; }
    cusolverDnHandle_t solver() const { return solver_; }

private:
    cublasHandle_t blas_ = nullptr;
    cusolverDnHandle_t solver_ = nullptr;
};

using CudaContextPtr = std::shared_ptr<CudaContext>;

}  // namespace qs::gpu
