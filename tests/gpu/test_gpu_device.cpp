// Device query and backend selection in a CUDA build: both with and without a device.
#include <gtest/gtest.h>

#include "qs/error.h"
#include "qs/gpu/cuda_backend.h"
#include "qs/gpu/device_info.h"
#include "qs/pipeline/backend.h"

namespace qs::gpu {
namespace {

TEST(GpuDevice, QueryAnswersWithOrWithoutADevice) {
    const DeviceInfo info = queryDevice();
    if (!info.present) {
        EXPECT_NE(info.whyNot.find("no CUDA device"), std::string::npos) << info.whyNot;
        EXPECT_EQ(describeDevice(info), info.whyNot);
        return;
    }
    EXPECT_FALSE(info.name.empty());
    EXPECT_GT(info.totalBytes, 0);
    EXPECT_LE(info.freeBytes, info.totalBytes);
    EXPECT_GE(info.major, 8);  // the architectures qs_gpu is built for
    EXPECT_EQ(describeDevice(info).rfind("CUDA: " + info.name + ", ", 0), 0u);
}

TEST(GpuDevice, SelectionFollowsTheDevice) {
    registerCudaBackend();
    const DeviceInfo info = queryDevice();
    const pipeline::BackendSelection selection = pipeline::selectBackend(pipeline::DeviceChoice::Auto);
    if (info.present) {
        EXPECT_TRUE(selection.backend->isCuda());
        EXPECT_NE(selection.message.find("CUDA: "), std::string::npos) << selection.message;
        EXPECT_TRUE(pipeline::selectBackend(pipeline::DeviceChoice::Cuda).backend->isCuda());
    } else {
        EXPECT_FALSE(selection.backend->isCuda());
        EXPECT_NE(selection.message.find(info.whyNot), std::string::npos) << selection.message;
        EXPECT_THROW(pipeline::selectBackend(pipeline::DeviceChoice::Cuda), Error);
    }
    EXPECT_FALSE(pipeline::selectBackend(pipeline::DeviceChoice::Cpu).backend->isCuda());
    pipeline::registerCudaBackendFactory(nullptr);
}

TEST(GpuDevice, RefusesWhatDoesNotFitWithTheNumbers) {
    const DeviceInfo info = queryDevice();
    if (!info.present) GTEST_SKIP() << info.whyNot;
    try {
        requireDeviceMemory(info.totalBytes * 2, "a test allocation");
        FAIL() << "twice the device's memory was accepted";
    } catch (const Error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("a test allocation needs"), std::string::npos) << message;
        EXPECT_NE(message.find("GiB free of"), std::string::npos) << message;
    }
    EXPECT_NO_THROW(requireDeviceMemory(1 << 20, "a small allocation"));
}

}  // namespace
}  // namespace qs::gpu
