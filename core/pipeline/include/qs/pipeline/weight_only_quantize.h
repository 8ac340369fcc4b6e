#pragma once
// Quantization without a forward pass: the methods that need nothing but a linear's weight (RTN, FP8,
// MXFP4, NVFP4, NF4, the trellis) applied to every linear of a checkpoint whose architecture QuantScope
// does not run (Gemma 3, Phi, the text tower of a vision-language model, ...), and exported like a
// Job's result. Without the model running there is no KL and no output error: what is measured is
// each linear's weight error ||W - Q|| / ||W||, and the report says so.
//
// Which linears: the 2-D float "<prefix>.weight" tensors that tensor_name.h places inside decoder
// layers as linears. Left dense: embeddings and lm_head, MoE routers ("…gate", "…router", a shared
// expert's "…_gate": [experts, hidden], which the serving engines keep in full precision), and every
// tensor of a vision or audio tower or projector (their names say "vision", "visual", "audio" or
// "multi_modal_projector"): the engines run those unquantized. A fused linear (Phi-3's qkv_proj,
// gate_up_proj) is quantized as it is stored.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/io/checkpoint.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/method_spec.h"
#include "qs/progress.h"
#include "qs/quant/quantized_linear.h"

namespace qs::pipeline {

struct WeightOnlyLinear {
    std::string prefix;                                  // "model.layers.0.self_attn.q_proj"
    std::shared_ptr<const quant::QuantizedLinear> q;
    double weightError = 0.0;                            // ||W - Q|| / ||W|| (0 for a zero weight)
};

struct WeightOnlyResult {
    MethodSpec method;
    std::vector<WeightOnlyLinear> linears;   // in the checkpoint's tensor order
    std::vector<std::string> keptDense;      // the linears left dense on purpose (routers, towers), by prefix
    double bitsPerWeight = 0.0;              // over the quantized linears, weighted by their size
    double seconds = 0.0;
};

// Why `method` cannot run without a forward pass (it needs calibration, quantizes activations or the KV
// cache, or writes GGUF); "" when it can.
std::string weightOnlyRefusal(const MethodSpec& method);

// The prefixes of the linears quantizeWeightsOnly quantizes, and of those it leaves dense on purpose.
struct WeightOnlySelection {
    std::vector<std::string> quantized, keptDense;
};
WeightOnlySelection selectWeightOnlyLinears(const io::Checkpoint& checkpoint);

// Throws qs::Error for a method that needs calibration or writes GGUF, a quantized source, a checkpoint
// without a linear to quantize, or a non-finite weight (naming the tensor); qs::Cancelled.
WeightOnlyResult quantizeWeightsOnly(const io::Checkpoint& checkpoint, const MethodSpec& method, std::uint64_t seed,
                                     const ProgressCallback& progress, const CancelToken& cancel);

// exportLinears with a report that records the method, the weight errors and that no KL was measured.
std::filesystem::path exportWeightsOnly(const ExportRequest& request, const io::Checkpoint& source, const WeightOnlyResult& result,
                                        const ProgressCallback& progress, const CancelToken& cancel);

}  // namespace qs::pipeline
