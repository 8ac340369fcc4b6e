#pragma once
// gpt-oss's clamped SwiGLU (transformers' GptOssExperts, llama.cpp's ggml_swiglu_oai) on the output of an
// expert's fused gate_up projection, whose column 2i holds gate_i and column 2i + 1 up_i:
//   g = min(gate, limit), u = clamp(up, -limit, limit), out = (u + 1) · g · sigmoid(alpha · g).
#include "qs/matrix.h"

namespace qs::model {

// gateUp [T, 2I] -> [T, I], in f32 as torch computes it.
MatrixF clampedSwiglu(const MatrixF& gateUp, float limit, float alpha);

// The same on gate and up kept apart ([T, I] each), as a gpt-oss GGUF stores them (ffn_gate_exps, ffn_up_exps).
MatrixF clampedSwiglu(const MatrixF& gate, const MatrixF& up, float limit, float alpha);

}  // namespace qs::model
