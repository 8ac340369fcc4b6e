#pragma once
// GPTAQ (Li, Yin, Panda, "GPTAQ: Efficient Finetuning-Free Quantization for Asymmetric Calibration",
// ICML 2025; GPTQModel's GPTAQ, formerly GPTQv2): GPTQ whose target is the full-precision model's
// output. With X the full-precision model's inputs to the linear and X̃ the quantized model's
// (true-sequential), it minimises ||Q X̃ - W X||² rather than GPTQ's ||(Q - W) X̃||²: H = 2 X̃ᵀX̃ / n as
// GPTQ's, and D = 2 ΔXᵀ X̃ / n (ΔX = X - X̃, D(i, j) = 2 Σ_t ΔX_ti X̃_tj / n) gives the correction
//     P = alpha · triu₁(D Uᵀ) · U        (U the upper Cholesky factor of H⁻¹, as GPTQ's)
// by which each quantized column's weights move the columns after it (GPTQModel's update: within a
// block of columns by the weights the column had when it was quantized, past the block by its
// quantized value). The result is a plain GPTQ linear (Method::Gptq): it exports as GPTQ does.
//
// It runs on the CPU (CpuGptqSolver with the correction; cpu_gptq_solver.cpp); P is formed once,
// before the column loop, in D's memory. Memory beyond GPTQ's: D (n² f32, given), a copy of H for
// the error measure (n²) and the quantized values ([out, in] f32).
#include "qs/matrix.h"
#include "qs/quant/gptq.h"
#include "qs/quant/quantized_linear.h"

namespace qs::quant {

constexpr double kGptaqAlpha = 0.25;  // GPTQModel's and the paper's default

// w [out, in], h [in, in] = 2 X̃ᵀX̃ / n, dxxt [in, in] = 2 (X - X̃)ᵀ X̃ / n over the same tokens. With
// dxxt = 0 or alpha = 0 the codes are quantizeGptq's, bit for bit. outputError / outputMse are
// measured on X̃ (h), as GPTQ's are.
QuantizedLinear quantizeGptaq(const MatrixF& w, const MatrixF& h, const MatrixF& dxxt, const GptqOptions& options = {},
                              double alpha = kGptaqAlpha);

}  // namespace qs::quant
