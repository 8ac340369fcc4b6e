// Backend selection and the CUDA backend's registration hook (core itself knows no CUDA).
#include <mutex>
#include <string>

#include "qs/error.h"
#include "qs/pipeline/backend.h"
#include "qs/pipeline/backend_self_check.h"

namespace qs::pipeline {
namespace {

struct Registry {
    std::mutex mutex;
    CudaBackendFactory cuda;
};

Registry& registry() {
    static Registry r;
    return r;
}

CudaBackendFactory registeredFactory() {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    return r.cuda;
}

// The CUDA backend, or nullptr with the reason.
std::shared_ptr<Backend> tryCuda(std::string& whyNot) {
    const CudaBackendFactory factory = registeredFactory();
    if (!factory) {
        whyNot = "this build has no CUDA backend (configured without QS_WITH_CUDA)";
        return nullptr;
    }
    std::shared_ptr<Backend> backend = factory(whyNot);
    if (!backend && whyNot.empty()) whyNot = "no CUDA device";
    return backend;
}

}  // namespace

DeviceChoice parseDeviceChoice(std::string_view text) {
    if (text == "auto") return DeviceChoice::Auto;
    if (text == "cpu") return DeviceChoice::Cpu;
    if (text == "cuda") return DeviceChoice::Cuda;
    throw Error("unknown device '" + std::string(text) + "' (expected cpu, cuda or auto)");
}

std::string_view deviceChoiceName(DeviceChoice choice) {
    switch (choice) {
    case DeviceChoice::Auto: return "auto";
    case DeviceChoice::Cpu: return "cpu";
    case DeviceChoice::Cuda: return "cuda";
    }
    return "auto";
}

void registerCudaBackendFactory(CudaBackendFactory factory) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.cuda = std::move(factory);
}

bool cudaBackendRegistered() { return static_cast<bool>(registeredFactory()); }

BackendSelection selectBackend(DeviceChoice choice) {
    BackendSelection selection;
    if (choice == DeviceChoice::Cpu) {
        selection.backend = makeCpuBackend();
        selection.message = "device: " + selection.backend->description() + " (chosen with --device cpu)";
        return selection;
    }
    std::string whyNot;
    selection.backend = tryCuda(whyNot);
    if (selection.backend) {
        // A device must agree with the CPU before its results are trusted (backend_self_check.cpp).
        const std::string failure = backendSelfCheck(*selection.backend);
        if (failure.empty()) {
            selection.message = "device: " + selection.backend->description();
            return selection;
        }
        whyNot = selection.backend->description() + " failed its start-up check against the CPU: " + failure;
        selection.backend.reset();
    }
    if (choice == DeviceChoice::Cuda) throw Error("--device cuda: " + whyNot);
    selection.backend = makeCpuBackend();
    selection.message = "device: " + selection.backend->description() + " (" + whyNot + ")";
    return selection;
}

}  // namespace qs::pipeline
