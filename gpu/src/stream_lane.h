#pragma once
// Streams for work that overlaps its uploads with its arithmetic (the Hessian accumulation): a copy
// stream, a compute stream and a cuBLAS handle bound to the compute stream, with events and pinned
// host memory to hand buffers from one to the other. Both streams are blocking streams, so the rest of
// the backend (cuBLAS and kernels on the legacy default stream) stays ordered with them.
#include <cstddef>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace qs::gpu {

class CudaEvent {
public:
    CudaEvent();
    ~CudaEvent();
    CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
    CudaEvent& operator=(CudaEvent&&) = delete;
    CudaEvent(const CudaEvent&) = delete;

    void record(cudaStream_t stream);
    void synchronize() const;  // the host waits for the work recorded before it
    cudaEvent_t get() const { return event_; }

private:
    cudaEvent_t event_ = nullptr;
};

// Page-locked host memory (cudaHostAlloc): what lets cudaMemcpyAsync overlap with kernels.
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    explicit PinnedBuffer(std::size_t bytes);
    ~PinnedBuffer();
    PinnedBuffer(PinnedBuffer&& other) noexcept
        : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
    PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
    PinnedBuffer(const PinnedBuffer&) = delete;

    void* data() const { return ptr_; }
    std::size_t bytes() const { return bytes_; }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

class StreamLane {
public:
    StreamLane();
    ~StreamLane();
    StreamLane(const StreamLane&) = delete;
    StreamLane& operator=(const StreamLane&) = delete;

    cudaStream_t copy() const { return copy_; }
    cudaStream_t compute() const { return compute_; }
    cublasHandle_t blas() const { return blas_; }  // runs on compute()
    void synchronize() const;                      // both streams

private:
    cudaStream_t copy_ = nullptr;
    cudaStream_t compute_ = nullptr;
    cublasHandle_t blas_ = nullptr;
};

}  // namespace qs::gpu
