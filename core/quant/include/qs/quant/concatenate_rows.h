#pragma once
// concatenateRows: the QuantizedLinear of a fused projection (Phi-3's qkv_proj = q, k, v; gate_up_proj
// = gate, up) from its parts, their output rows one after the other. The parts read one input, so
// everything per input column (act-order g_idx, AWQ's input scales, the activation quantization)
// must agree; what is per output row (codes, scales, zeros, ggml blocks) is stacked.
// FP8 with one scale per tensor has one scale for the fused tensor: the parts are requantized to the
// largest of theirs, as vLLM does when it loads split FP8 shards into one linear (requantize_with_max_scale).
// Anything else that cannot be one tensor is refused with one line naming `fusedName`.
#include <string>
#include <vector>

#include "qs/quant/quantized_linear.h"

namespace qs::quant {

QuantizedLinear concatenateRows(const std::vector<const QuantizedLinear*>& parts, const std::string& fusedName);

}  // namespace qs::quant
