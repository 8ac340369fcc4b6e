#pragma once
// Activation quantization as a serving engine applies it at a linear's input, and the FP8 KV cache,
// simulated in f32 ("fake-quantized": quantized, then decoded back) so that the reference forward pass
// sees what the engine's low-precision GEMM and cache see:
//   Fp8Tensor  static: one calibrated scale s per linear (input_scale = amax / 448): x ~ e4m3(x / s) * s.
//              vLLM's static FP8 W8A8 (quant_method fp8), compressed-tensors FP8, ModelOpt FP8.
//   Fp8Token   dynamic: s_t = amax(token t) / 448, computed at run time (compressed-tensors FP8_DYNAMIC).
//   Nvfp4      each token's blocks of 16 inputs share an E4M3 scale computed at run time under one
//              calibrated global scale g = amax / (448 * 6) (ModelOpt's input_scale; compressed-tensors
//              stores 1 / g as input_global_scale): the NVFP4 weight arithmetic applied to every token.
// Values beyond the calibrated range saturate (FP8 at 448 s, NVFP4 block scales at 448 g), as on the device.
#include <span>
#include <string_view>

#include "qs/matrix.h"

namespace qs::quant {

enum class ActivationFormat { None, Fp8Tensor, Fp8Token, Nvfp4 };

struct ActivationQuant {
    ActivationFormat format = ActivationFormat::None;
    float scale = 0.0f;  // Fp8Tensor: input_scale; Nvfp4: the global scale g; unused otherwise

    bool active() const { return format != ActivationFormat::None; }
    bool operator==(const ActivationQuant&) const = default;
};

// "none", "fp8-static", "fp8-token", "nvfp4"
std::string_view activationFormatName(ActivationFormat format);
// Whether the format stores a calibrated scale (Fp8Tensor, Nvfp4).
bool needsCalibratedScale(ActivationFormat format);
// The calibrated scale of `format` for inputs of largest magnitude `amax` (floored at 1e-12, as the weights' are).
float activationScaleFor(ActivationFormat format, float amax);

// The one quantization of an input that several linears read (q/k/v, gate/up), as an engine that fuses
// them applies it: their common format with the largest scale (vLLM takes the max over the shards).
// Throws qs::Error when the formats differ.
ActivationQuant fusedInput(std::span<const ActivationQuant> inputs);

// x [tokens, features] replaced by what the engine's GEMM reads.
void fakeQuantize(MatrixF& x, const ActivationQuant& quant);
// FP8 E4M3 with one static scale, the KV cache's k_scale / v_scale: x ~ e4m3(x / scale) * scale.
void fakeQuantizeFp8(MatrixF& x, float scale);

}  // namespace qs::quant
