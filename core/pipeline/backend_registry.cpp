// Backend selection and the CUDA backend's registration hook (core itself knows no CUDA).
#include <mutex>
#include <optional>
#include <string>

#include "qs/error.h"
#include "qs/pipeline/backend.h"
#include "qs/pipeline/backend_self_check.h"

namespace qs::pipeline {
namespace {

// The factory's device, or why there is none: its backend is trusted only after the start-up check.
struct Verdict {
    std::shared_ptr<Backend> trusted;
    std::string whyNot;
};

struct Registry {
    std::mutex mutex;
    CudaBackendFactory cuda;
    // Reached once per registration: building a device backend and checking it against the CPU takes
    // a fraction of a second, and the GUI asks at start-up and again for every job.
    std::mutex checking;  // guards verdict; held while a verdict is reached
    std::optional<Verdict> verdict;
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
std::shared_ptr<Backend> makeCuda(std::string& whyNot) {
    const CudaBackendFactory factory = registeredFactory();
    if (!factory) {
        whyNot = "this build has no CUDA backend (configured without QS_WITH_CUDA)";
        return nullptr;
    }
    std::shared_ptr<Backend> backend = factory(whyNot);
    if (!backend && whyNot.empty()) whyNot = "no CUDA device";
    return backend;
}

// The CUDA backend if it agrees with the CPU (backend_self_check.cpp), else nullptr with the reason.
std::shared_ptr<Backend> makeTrustedCuda(std::string& whyNot) {
    std::shared_ptr<Backend> backend = makeCuda(whyNot);
    if (!backend) return nullptr;
    const std::string failure = backendSelfCheck(*backend);
    if (failure.empty()) return backend;
    whyNot = backend->description() + " failed its start-up check against the CPU: " + failure;
    return nullptr;
}

std::shared_ptr<Backend> trustedCuda(std::string& whyNot) {
    Registry& r = registry();
    std::lock_guard lock(r.checking);
    if (!r.verdict) {
        Verdict v;
        v.trusted = makeTrustedCuda(v.whyNot);
        r.verdict = std::move(v);
    }
    whyNot = r.verdict->whyNot;
    return r.verdict->trusted;
}

}  // namespace

std::unique_ptr<HessianSink> Backend::hessianOfBf16Inputs(std::int64_t) const {
    throw Error(description() + " accumulates the Hessians of f32 inputs only (--matmul f32)");
}

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
    std::scoped_lock lock(r.checking, r.mutex);
    r.cuda = std::move(factory);
    r.verdict.reset();
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
    selection.backend = trustedCuda(whyNot);
    if (selection.backend) {
        selection.message = "device: " + selection.backend->description();
        return selection;
    }
    if (choice == DeviceChoice::Cuda) throw Error("--device cuda: " + whyNot);
    selection.backend = makeCpuBackend();
    selection.message = "device: " + selection.backend->description() + " (" + whyNot + ")";
    return selection;
}

}  // namespace qs::pipeline
