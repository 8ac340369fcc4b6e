#pragma once
// FP8 W8A8: what an FP8 x FP8 tensor-core GEMM computes, on the CPU, to measure how much damage
// quantizing the activations adds to quantizing the weights. Activations are quantized
// dynamically, per token and per `group` input channels (amax / 448 each), as vLLM's and
// DeepSeek's block-FP8 kernels do; both operands are E4M3, products are accumulated in f32 and each
// slice of K is rescaled by its activation and weight scales (w8a8_reference of docs/reference-algorithms.md).
#include <cstdint>
#include <vector>

#include "qs/matrix.h"
#include "qs/quant/fp8.h"
#include "qs/quant/quantized_linear.h"

namespace qs::quant {

// The activations a W8A8 GEMM consumes: E4M3 codes [tokens, channels] with one scale per token
// per `group` channels (the last group may be shorter).
struct Fp8Activations {
    std::int64_t tokens = 0;
    std::int64_t channels = 0;
    int group = 128;
    std::vector<std::uint8_t> codes;  // row-major [tokens, channels]
    MatrixF scales;                   // [tokens, ceil(channels / group)]
    MatrixF dequantize() const;
};

Fp8Activations quantizeActivationsFp8(const MatrixF& x, int group = 128);

// Y = Xq Wq^T [tokens, out] for an FP8 weight (any granularity) and activations X [tokens, in].
MatrixF w8a8Reference(const MatrixF& x, const QuantizedLinear& fp8Weight, int group = 128);

// Output errors of X W^T [tokens, out], relative (||Y - Yq||_F / ||Y||_F) and mean squared, for the
// weight alone quantized (W8A16), the activations alone (W16A8) and both (W8A8).
struct W8A8Error {
    double weightOnlyRelative = 0.0;
    double activationOnlyRelative = 0.0;
    double w8a8Relative = 0.0;
    double weightOnlyMse = 0.0;
    double activationOnlyMse = 0.0;
    double w8a8Mse = 0.0;
};

W8A8Error measureW8A8(const MatrixF& x, const MatrixF& w, Fp8Scaling scaling = Fp8Scaling::Block, int group = 128);

}  // namespace qs::quant
