#include "qs/gpu/device_info.h"

#include <cstdio>

#include <cuda_runtime.h>

#include "qs/error.h"

#include "cuda_check.h"

namespace qs::gpu {
namespace {

std::string gib(std::int64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return text;
}

}  // namespace

DeviceInfo queryDevice() {
    DeviceInfo info;
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        cudaGetLastError();
        info.whyNot = std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(status) + ")";
        return info;
    }
    if (count == 0) {
        info.whyNot = "no CUDA device (the driver reports none)";
        return info;
    }
    cudaDeviceProp props{};
    QS_CUDA(cudaGetDeviceProperties(&props, 0));
    QS_CUDA(cudaSetDevice(0));
    std::size_t freeBytes = 0, totalBytes = 0;
    QS_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
    info.present = true;
    info.name = props.name;
    info.major = props.major;
    info.minor = props.minor;
    info.freeBytes = static_cast<std::int64_t>(freeBytes);
    info.totalBytes = static_cast<std::int64_t>(totalBytes);
    return info;
}

std::string describeDevice(const DeviceInfo& info) {
    if (!info.present) return info.whyNot;
    return "CUDA: " + info.name + ", " + gib(info.freeBytes) + " free";
}

void requireDeviceMemory(std::int64_t bytes, const std::string& what) {
    std::size_t freeBytes = 0, totalBytes = 0;
    QS_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
    if (bytes > static_cast<std::int64_t>(freeBytes))
        throw Error(what + " needs " + gib(bytes) + " of device memory; the device has " +
                    gib(static_cast<std::int64_t>(freeBytes)) + " free of " +
                    gib(static_cast<std::int64_t>(totalBytes)));
}

}  // namespace qs::gpu
