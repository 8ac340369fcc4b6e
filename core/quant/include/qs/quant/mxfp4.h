#pragma once
// MXFP4 (OCP Microscaling): blocks of 32 consecutive inputs of a row share one power-of-two scale
// (E8M0, bias 127); each value is an FP4 E2M1 code. The shared exponent is floor(log2(amax)) - 2,
// clamped to [-127, 127] (amax floored at 2^-126), which puts the block's largest magnitude in
// E2M1's top binade [4, 8); values above 6 saturate. Codes round to nearest even and keep the sign
// of values that round to zero. Bit for bit quantize_mxfp4 of docs/reference-algorithms.md (gpt-oss layout).
#include <cstdint>
#include <vector>

#include "qs/matrix.h"
#include "qs/quant/quantized_linear.h"

namespace qs::quant {

inline constexpr int kMxfp4BlockSize = 32;

// Method Mxfp4, CodeKind E2M1, blockRows 1, blockCols 32, scales = 2^e (exact in f32), codes one
// E2M1 nibble per weight. A row whose length is not a multiple of 32 ends in a shorter block.
QuantizedLinear quantizeMxfp4(const MatrixF& w);
MatrixF dequantizeMxfp4(const QuantizedLinear& q);
void dequantizeMxfp4(const QuantizedLinear& q, float* out);  // into rows * cols floats, no allocation

// The E8M0 bytes (e + 127) of q's scales, row-major like q.scales: the `*_scales` tensor.
std::vector<std::uint8_t> mxfp4ScaleBytes(const QuantizedLinear& q);

}  // namespace qs::quant
