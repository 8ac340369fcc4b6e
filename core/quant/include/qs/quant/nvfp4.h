#pragma once
// NVFP4 (NVIDIA): blocks of 16 consecutive inputs of a row share an E4M3 scale, and the tensor has
// one FP32 scale on top:
//   tensorScale = amax(W) / (448 * 6)                  (ModelOpt's weight_scale_2; amax floored at 1e-12)
//   blockScale  = e4m3(min(amax_block / 6 / tensorScale, 448))   (weight_scale)
//   code        = e2m1(x / (blockScale * tensorScale)), 0 where that product is 0
//   w ~ e2m1(code) * blockScale * tensorScale
// Bit for bit the reference quantize_nvfp4 (docs/reference-algorithms.md).
#include "qs/matrix.h"
#include "qs/quant/quantized_linear.h"

namespace qs::quant {

inline constexpr int kNvfp4BlockSize = 16;

// Method Nvfp4, CodeKind E2M1, blockRows 1, blockCols 16, scales = the E4M3 block scales as f32,
// globalScale = tensorScale. A row whose length is not a multiple of 16 ends in a shorter block.
QuantizedLinear quantizeNvfp4(const MatrixF& w);
// The same under a given tensor scale (a calibrated activation range): block scales beyond 448 saturate.
QuantizedLinear quantizeNvfp4(const MatrixF& w, float tensorScale);
MatrixF dequantizeNvfp4(const QuantizedLinear& q);
void dequantizeNvfp4(const QuantizedLinear& q, float* out);  // into rows * cols floats, no allocation

}  // namespace qs::quant
