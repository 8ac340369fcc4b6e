#pragma once
// The forward pass's GEMMs (cuBLAS SGEMM, f32 without TF32, as the CPU) and attention on the device.
#include <memory>

#include "qs/model/layer_math.h"

#include "cuda_context.h"

namespace qs::gpu {

std::shared_ptr<const model::LayerMath> makeCudaLayerMath(CudaContextPtr context);

}  // namespace qs::gpu
