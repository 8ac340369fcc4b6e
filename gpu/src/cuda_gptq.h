#pragma once
// GPTQ on the device: quant::quantizeGptq's frame (checks, prepared problem, damping schedule,
// result, error measure) with a device GptqSolver plugged in — the Cholesky factor of the damped
// inverse with cuSOLVER (potrf + trtri of J H J: U = J L⁻¹ J, the inverse of the CPU's upperFactor), the
// block's column loop as a kernel, the lazy update as one SGEMM.
#include "qs/quant/gptq.h"

#include "cuda_context.h"

namespace qs::gpu {

// Consumes H: the host's copy is freed once it is on the device.
quant::QuantizedLinear cudaGptq(const CudaContext& context, const MatrixF& w, MatrixF&& h,
                                const quant::GptqOptions& options);

// Device memory cudaGptq needs for a [rows, cols] weight (it refuses with the numbers below this).
std::int64_t gptqDeviceBytes(std::int64_t rows, std::int64_t cols, int blockSize, int groups);

// U with H⁻¹ = UᵀU on the device (J L⁻¹ J, L the lower Cholesky factor of J H J): false when H is not
// positive definite. h and u are
// device [n, n] row-major; `work` is scratch of n * n floats.
bool upperCholeskyOfInverseOnDevice(const CudaContext& context, const float* h, std::int64_t n, float lambda,
                                    float* work, float* u);

}  // namespace qs::gpu
