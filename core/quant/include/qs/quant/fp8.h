#pragma once
// FP8 E4M3 weight quantization with the three scale granularities checkpoints use:
//   Block       one scale per 128 x 128 tile (DeepSeek-V3 / Qwen3-FP8, `weight_scale_inv`)
//   PerChannel  one scale per output row (compressed-tensors FP8_DYNAMIC, ModelOpt per-channel)
//   PerTensor   one scale for the matrix (vLLM "fp8", ModelOpt FP8)
// Every scale is amax / 448 of its block (amax floored at 1e-12) and MULTIPLIES the stored value:
// w ~ e4m3(code) * scale. Codes are x / scale clamped to +-448, rounded to nearest even, which is
// bit for bit what quantize_blocks of docs/reference-algorithms.md (PyTorch's float8_e4m3fn cast) produces.
#include <cstdint>

#include "qs/matrix.h"
#include "qs/quant/quantized_linear.h"

namespace qs::quant {

enum class Fp8Scaling { Block, PerChannel, PerTensor };

// Method Fp8, CodeKind E4M3, codes = E4M3 bytes [rows * cols], scales [ceil(rows / blockRows),
// ceil(cols / blockCols)]. Edge tiles of Block are smaller (the reference's zero padding changes no amax).
QuantizedLinear quantizeFp8(const MatrixF& w, Fp8Scaling scaling = Fp8Scaling::Block, int block = 128);
// The header of quantizeFp8's result for a [rows, cols] weight (no parts yet): its scale blocks.
QuantizedLinear fp8Layout(std::int64_t rows, std::int64_t cols, Fp8Scaling scaling, int block = 128);

// e4m3(code) * scale of the element's block; the inverse of quantizeFp8 up to rounding.
MatrixF dequantizeFp8(const QuantizedLinear& q);
// The same into rows * cols floats the caller owns (no allocation: a fresh 32 MiB matrix costs as much
// in page faults as the decoding itself).
void dequantizeFp8(const QuantizedLinear& q, float* out);

// The scale amax / 448 of a block with largest magnitude `amax` (what weight_scale_inv stores).
float fp8ScaleFor(float amax);

// Codes of `count` values divided by `scale` (clamped, RNE): the inner loop of every granularity,
// also used for the activations of W8A8.
void encodeE4m3Scaled(const float* in, std::int64_t count, float scale, std::uint8_t* out);

}  // namespace qs::quant
