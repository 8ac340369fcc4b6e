#pragma once
// An owned device allocation (cudaMalloc / cudaFree) with typed copies to and from the host.
// The header is CUDA-free so that host-only code (tests, benchmarks) can use it.
#include <cstddef>
#include <cstdint>
#include <utility>

namespace qs::gpu {

class RawDeviceBuffer {
public:
    RawDeviceBuffer() = default;
    explicit RawDeviceBuffer(std::size_t bytes);
    ~RawDeviceBuffer();
    RawDeviceBuffer(RawDeviceBuffer&& other) noexcept
        : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
    RawDeviceBuffer& operator=(RawDeviceBuffer&& other) noexcept;
    RawDeviceBuffer(const RawDeviceBuffer&) = delete;
    RawDeviceBuffer& operator=(const RawDeviceBuffer&) = delete;

    void* data() const { return ptr_; }
    std::size_t bytes() const { return bytes_; }
    void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
    void download(void* host, std::size_t bytes, std::size_t offset = 0) const;
    void fillZero();

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

template <typename T>
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::int64_t count) : raw_(static_cast<std::size_t>(count) * sizeof(T)), count_(count) {}
    DeviceBuffer(const T* host, std::int64_t count) : DeviceBuffer(count) { upload(host, count); }

    T* data() const { return static_cast<T*>(raw_.data()); }
    std::int64_t size() const { return count_; }
    void upload(const T* host, std::int64_t count, std::int64_t offset = 0) {
        raw_.upload(host, static_cast<std::size_t>(count) * sizeof(T), static_cast<std::size_t>(offset) * sizeof(T));
    }
    void download(T* host, std::int64_t count, std::int64_t offset = 0) const {
        raw_.download(host, static_cast<std::size_t>(count) * sizeof(T), static_cast<std::size_t>(offset) * sizeof(T));
    }
    void fillZero() { raw_.fillZero(); }

private:
    RawDeviceBuffer raw_;
    std::int64_t count_ = 0;
};

}  // namespace qs::gpu
