#pragma once
// The library handles of one CUDA backend (cuBLAS, cuSOLVER, a stream lane), created once and shared
// by its operations.
#include <memory>
#include <mutex>

#include <cublas_v2.h>
#include <cusolverDn.h>

#include "stream_lane.h"

namespace qs::gpu {

class CudaContext {
public:
    CudaContext();
    ~CudaContext();
    CudaContext(const CudaContext&) = delete;
    CudaContext& operator=(const CudaContext&) = delete;

    cublasHandle_t blas() const { return blas_; }
    cusolverDnHandle_t solver() const { return solver_; }
    // The copy and compute streams of overlapped work, made on first use.
    StreamLane& lane() const {
        std::call_once(laneMade_, [this] { lane_ = std::make_unique<StreamLane>(); });
        return *lane_;
    }

private:
    cublasHandle_t blas_ = nullptr;
    cusolverDnHandle_t solver_ = nullptr;
    mutable std::once_flag laneMade_;
    mutable std::unique_ptr<StreamLane> lane_;
};

using CudaContextPtr = std::shared_ptr<CudaContext>;

}  // namespace qs::gpu
