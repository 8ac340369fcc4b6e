#include "stream_lane.h"

#include "cuda_check.h"

namespace qs::gpu {

CudaEvent::CudaEvent() { QS_CUDA(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
CudaEvent::~CudaEvent() {
    if (event_) cudaEventDestroy(event_);  // a destructor must not throw
}
void CudaEvent::record(cudaStream_t stream) { QS_CUDA(cudaEventRecord(event_, stream)); }
void CudaEvent::synchronize() const { QS_CUDA(cudaEventSynchronize(event_)); }

PinnedBuffer::PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) QS_CUDA(cudaHostAlloc(&ptr_, bytes, cudaHostAllocDefault));
}
PinnedBuffer::~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
}
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
        if (ptr_) cudaFreeHost(ptr_);
        ptr_ = std::exchange(other.ptr_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

StreamLane::StreamLane() {
    QS_CUDA(cudaStreamCreate(&copy_));
    try {
        QS_CUDA(cudaStreamCreate(&compute_));
        QS_CUBLAS(cublasCreate(&blas_));
        QS_CUBLAS(cublasSetStream(blas_, compute_));
        QS_CUBLAS(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));  // no TF32, as the backend's own handle
    } catch (...) {
        if (blas_) cublasDestroy(blas_);
        if (compute_) cudaStreamDestroy(compute_);
        cudaStreamDestroy(copy_);
        throw;
    }
}

StreamLane::~StreamLane() {
    cublasDestroy(blas_);
    cudaStreamDestroy(compute_);
    cudaStreamDestroy(copy_);
}

void StreamLane::synchronize() const {
    QS_CUDA(cudaStreamSynchronize(copy_));
    QS_CUDA(cudaStreamSynchronize(compute_));
}

}  // namespace qs::gpu
