#pragma once
// The CUDA backend (pipeline::Backend on the first CUDA device). The executables call
// registerCudaBackend() from main when built with CUDA; after that pipeline::selectBackend() can
// choose it. No CUDA header here: callers compile with the host compiler alone.
#include <memory>
#include <string>

#include "qs/pipeline/backend.h"

namespace qs::gpu {

// Makes pipeline::selectBackend() aware of the CUDA backend.
void registerCudaBackend();

// The backend on device 0, or nullptr with whyNot saying why (no driver, no device).
std::shared_ptr<pipeline::Backend> makeCudaBackend(std::string& whyNot);

}  // namespace qs::gpu
