#pragma once
// Quantization without a forward pass: the methods that need nothing but a linear's weight (RTN, FP8,
// MXFP4, NVFP4, NF4, the trellis) applied to every linear of a checkpoint whose architecture QuantScope
// does not run (Gemma 3, Phi, the text tower of a vision-language model, ...), and exported like a
// Job's result. Without the model running there is no KL and no output error: what is measured is
// each linear's weight error ||W - Q|| / ||W||, and the report says so.
//
// Which linears: the 2-D float "<prefix>.weight" tensors that tensor_name.h places inside decoder
// layers as linears, and those a quantized source (FP8, GPTQ, compressed-tensors, ...) stores in its
// format's parts, decoded by formats::LinearReader: their decoded weights are what is quantized anew
// (quantized_source.h), and the report's weight errors are against them. Left dense: embeddings and lm_head, MoE routers ("…gate", "…router", a shared
// expert's "…_gate": [experts, hidden], which the serving engines keep in full precision), and every
// tensor of a vision or audio tower or projector (their names say "vision", "visual", "audio" or
// "multi_modal_projector"): the engines run those unquantized. A fused linear (Phi-3's qkv_proj,
// gate_up_proj) is quantized as it is stored.
#include <cstdint>
#include <string>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/method_spec.h"
#include "qs/progress.h"
#include "qs/quant/quantized_linear.h"

namespace qs::pipeline {

// Why `method` cannot run without a forward pass (it needs calibration, quantizes activations or the KV
// cache, or writes GGUF); "" when it can.
std::string weightOnlyRefusal(const MethodSpec& method);

// The prefixes of the linears a weight-only export quantizes, and of those it leaves dense on purpose,
// in the checkpoint's order (the reader's checkpoint: a quantized source's linears as its format stores them).
struct WeightOnlySelection {
    std::vector<std::string> quantized, keptDense;
};
WeightOnlySelection selectWeightOnlyLinears(const formats::LinearReader& reader);

struct WeightOnlyLinearReport {
    std::string prefix;
    double weightError = 0.0;  // ||W - Q|| / ||W|| (0 for a zero weight)
    double bitsPerWeight = 0.0;
};

struct WeightOnlyReport {
    std::filesystem::path written;
    std::vector<WeightOnlyLinearReport> linears;  // in the checkpoint's tensor order
    std::vector<std::string> keptDense;           // the linears left dense on purpose (routers, towers)
    double bitsPerWeight = 0.0;                   // over the quantized linears, weighted by their size
    double seconds = 0.0;
};

// Quantizes every selected linear of `source` with `method` and writes the export as it goes (through
// exportStreamed: one linear's codes in memory at a time), with quantscope_report.json recording the
// weight errors, that no KL was measured and the source's quantization when it had one. Throws
// qs::Error for a method weightOnlyRefusal refuses, a quantized source whose linears do not decode, a
// checkpoint without a linear to quantize, a non-finite weight or a linear the layout refuses (naming
// it; nothing is left at the destination), or qs::Cancelled.
WeightOnlyReport exportWeightsOnly(const ExportRequest& request, const io::Checkpoint& source, const MethodSpec& method,
                                   std::uint64_t seed, const ProgressCallback& progress, const CancelToken& cancel);

}  // namespace qs::pipeline
