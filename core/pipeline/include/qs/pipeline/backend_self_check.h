#pragma once
// A device backend's start-up check against the CPU backend (see backend_self_check.cpp).
#include <string>

#include "qs/pipeline/backend.h"

namespace qs::pipeline {

// Runs every operation of `device` on small seeded inputs and compares it with the CPU backend:
// encoders, the trellis and the Hessian's diagonal alone bit for bit, the Hessian within 1e-5 relative, GPTQ codes on ≥ 99.9 %
// of the weights and its loss within 1 %, AWQ's α and codes as the CPU's (its grid errors within
// 1e-4), and, when it runs forward passes, its linears and attention within 1e-5. Returns "" when all agree, else one phrase saying what
// differed or threw. Takes a few milliseconds on a device, well under a second on the CPU.
std::string backendSelfCheck(const Backend& device);

}  // namespace qs::pipeline
