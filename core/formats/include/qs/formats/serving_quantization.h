#pragma once
// Reads what a checkpoint tells its serving engine to quantize besides the weights
// (docs/formats/activation-scales.md): static input scales (FP8 W8A8 `input_scale`, NVFP4 W4A4
// `input_scale` / `input_global_scale`), per-token dynamic FP8 inputs (a compressed-tensors
// input_activations of strategy "token"), and the FP8 KV cache's `k_scale` / `v_scale` (under
// self_attn, or under k_proj / v_proj as ModelOpt writes them). QuantScope's evaluation then
// quantizes as the engine will.
#include <string>
#include <string_view>
#include <vector>

#include "qs/formats/format_info.h"
#include "qs/io/checkpoint.h"
#include "qs/quant/activation_quant.h"

namespace qs::formats {

struct ServingQuantization {
    quant::ActivationQuant input;  // of the linear's input
    float cacheScale = 0.0f;       // k_proj: k_scale, v_proj: v_scale; 0: the cache is not quantized
};

// One stored scale, for inspect and the GUI's plot.
struct ServingScale {
    std::string tensor;  // its full name
    std::string kind;    // "input_scale", "input_global_scale", "k_scale", "v_scale"
    int layer = -1;      // the decoder layer, -1 when the name has none
    float value = 0.0f;
};

// Whether a tensor is one of these scales (by its name's last part).
bool isServingScale(std::string_view tensorName);

// Every stored scale, checked: one value (shape [] or [1]), a float dtype, finite and positive.
// Throws qs::Error naming the file and the tensor of the first that is not.
std::vector<ServingScale> readServingScales(const io::Checkpoint& checkpoint);

// What the engine does around linear `prefix` (a decoder linear, "model.layers.0.self_attn.k_proj")
// whose weights are NVFP4 when `nvfp4Weights` (ModelOpt's input_scale is then NVFP4's global scale).
// Throws qs::Error for a scale that readServingScales would refuse.
ServingQuantization readServingQuantization(const io::Checkpoint& checkpoint, const FormatInfo& format,
                                            std::string_view prefix, bool nvfp4Weights);

}  // namespace qs::formats
