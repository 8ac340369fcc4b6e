#include "qs/gpu/device_buffer.h"

#include "cuda_check.h"

namespace qs::gpu {

RawDeviceBuffer::RawDeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) QS_CUDA(cudaMalloc(&ptr_, bytes));
}

RawDeviceBuffer::~RawDeviceBuffer() {
    if (ptr_) cudaFree(ptr_);  // a destructor must not throw; a failed free leaves nothing to do
}

RawDeviceBuffer& RawDeviceBuffer::operator=(RawDeviceBuffer&& other) noexcept {
    if (this != &other) {
        if (ptr_) cudaFree(ptr_);
        ptr_ = std::exchange(other.ptr_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
}

void RawDeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
    if (bytes == 0) return;
    QS_CUDA(cudaMemcpy(static_cast<char*>(ptr_) + offset, host, bytes, cudaMemcpyHostToDevice));
}

void RawDeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
    if (bytes == 0) return;
    QS_CUDA(cudaMemcpy(host, static_cast<const char*>(ptr_) + offset, bytes, cudaMemcpyDeviceToHost));
}

void RawDeviceBuffer::fillZero() {
    if (bytes_ > 0) QS_CUDA(cudaMemset(ptr_, 0, bytes_));
}

}  // namespace qs::gpu
