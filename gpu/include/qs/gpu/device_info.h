#pragma once
// What the CUDA runtime says about device 0; "no device" is an answer, not an error.
#include <cstdint>
#include <string>

namespace qs::gpu {

struct DeviceInfo {
    bool present = false;
    std::string whyNot;  // when !present: which call said so, and its message
    std::string name;
    std::int64_t freeBytes = 0;
    std::int64_t totalBytes = 0;
    int major = 0;  // compute capability
    int minor = 0;
};

DeviceInfo queryDevice();

// "CUDA: NVIDIA H200, 131.2 GiB free".
std::string describeDevice(const DeviceInfo& info);

// Throws qs::Error naming `what` and both numbers when `bytes` exceed the device's free memory.
void requireDeviceMemory(std::int64_t bytes, const std::string& what);

}  // namespace qs::gpu
