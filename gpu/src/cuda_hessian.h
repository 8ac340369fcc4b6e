#pragma once
// H = 2 XᵀX / n on the device: each chunk is one cuBLAS SSYRK (f32, lower triangle), added to an
// f64 sum as HessianAccumulator adds its chunks; mean |x| per channel in f64 in the CPU's order.
#include <memory>

#include "qs/pipeline/backend.h"

#include "cuda_context.h"

namespace qs::gpu {

std::unique_ptr<pipeline::HessianSink> makeCudaHessianSink(CudaContextPtr context, std::int64_t features);
// diag(H) alone: each chunk's column sums of squares added to f64 sums on the device.
std::unique_ptr<pipeline::DiagonalSink> makeCudaDiagonalSink(std::int64_t features);

// One SSYRK of x [n, f] (row-major, device) into gram (column-major [f, f], lower triangle).
void gramLowerOnDevice(const CudaContext& context, const float* x, std::int64_t n, std::int64_t f, float* gram);

}  // namespace qs::gpu
