#pragma once
// What a Job produces, as value types the CLI prints and the GUI plots.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "qs/analysis/kl_metrics.h"
#include "qs/io/checkpoint_fingerprint.h"
#include "qs/pipeline/layer_quantizer.h"
#include "qs/pipeline/method_spec.h"
#include "qs/pipeline/quantized_source.h"
#include "qs/pipeline/stored_layers.h"

namespace qs::pipeline {

// One row of the per-module log (GPTQModel's columns).
struct ModuleLog {
    std::string method;
    int layer = 0;
    std::string module;
    std::int64_t inFeatures = 0;
    std::int64_t outFeatures = 0;
    double outputError = 0.0;  // relative, on the calibration inputs (NaN without calibration)
    double loss = 0.0;         // GPTQ's logged loss (NaN for other methods)
    std::int64_t samples = 0;  // calibration rows (tokens)
    double damp = 0.0;         // GPTQ damping used (NaN for other methods)
    double seconds = 0.0;
    double bitsPerWeight = 0.0;
    std::uint64_t residentBytes = 0;  // process RSS when the module finished
    // A MoE expert: the calibration tokens the router sent to it (samples may count more: every token,
    // with all-expert calibration); -1 for the other linears.
    std::int64_t routedTokens = -1;

    // An expert whose Hessian came from fewer tokens than it has inputs (routed-only calibration of a
    // rarely chosen expert): its H is singular and GPTQ works mostly from the damping.
    bool starved() const { return routedTokens >= 0 && samples < inFeatures; }
};

struct MethodResult {
    MethodSpec method;
    io::CheckpointFingerprint source;  // the checkpoint it was quantized from (the exporter checks it)
    // Set when that checkpoint was quantized already: its decoded weights were quantized and were the KL's reference.
    std::optional<QuantizedSource> quantizedSource;
    // Set when the linears were quantized rotated (JobPlan::rotate): the seed of the rotation the export folds
    // into the tensors it writes dense.
    std::optional<std::uint64_t> rotationSeed;
    std::string error;                  // non-empty when the method could not be applied (e.g. a shape)
    double bitsPerWeight = 0.0;         // over the quantized linears, weighted by their size
    std::uint64_t linearBytes = 0;      // storage of the quantized linears
    std::uint64_t checkpointBytes = 0;  // plus everything kept in the source dtype
    double seconds = 0.0;               // quantization wall time
    analysis::KlReport kl;              // against the original on the evaluation text
    std::vector<double> perLayerKl;     // mean KLD with only layer i quantized (empty unless asked)
    std::vector<std::vector<double>>
        perGroupKl;  // [layer][kFusedGroups index]: mean KLD with only that group quantized
    std::vector<ModuleLog> modules;
    // The quantized linears, for export and the GUI: in RAM (`layers`), or in the Job's work folder
    // (`stored`, JobPlan::resultsOnDisk; `layers` is empty then). Read them through layerCount(),
    // layerAt() and linearHeaders(), which serve both.
    std::vector<QuantizedLayer> layers;
    std::shared_ptr<const StoredLayers> stored;
    bool mixed = false;  // a method per linear (JobPlan::mixed): `method` is its most common one, renamed
    // Set when no method made it: a quantized checkpoint evaluated as it is against its original (the
    // GUI's Evaluate, as `eval`), named by its format ("gguf Q4_K_M", "gptq 4-bit"); `method` is unused.
    std::string evaluatedCheckpoint;

    // The method's label, a mix's name ("mixed 3.50 bpw") or an evaluated checkpoint's.
    std::string label() const {
        if (!evaluatedCheckpoint.empty()) return evaluatedCheckpoint;
        return mixed ? method.name : method.label();
    }
};

// How many quantized layers the result has, in RAM or on disk.
std::size_t layerCount(const MethodResult& result);
// Layer `layer`'s complete linears: shared with the result when in RAM, read from the work folder
// when on disk (hold one layer at a time there).
QuantizedLayer layerAt(const MethodResult& result, std::size_t layer);
// Every layer's linears with at least their headers and small parts (scales, g_idx, measurements):
// complete when in RAM; without codes and ggml blocks when on disk. Enough for sizes, bits, configs
// and reports; not for encoding or decoding weights (layerAt).
const std::vector<QuantizedLayer>& linearHeaders(const MethodResult& result);
// Whether the result holds no quantized linear.
inline bool hasLayers(const MethodResult& result) { return layerCount(result) > 0; }

struct JobResult {
    io::CheckpointFingerprint source;                // the checkpoint the job read; each method carries it too
    std::optional<QuantizedSource> quantizedSource;  // its quantization, when it had one; each method carries it too
    std::vector<MethodResult> methods;
    // The FP8 KV cache's damage alone: the original weights with the cache quantized (when a method asks for it).
    std::optional<analysis::KlReport> kvCacheOnlyKl;
    std::size_t calibrationTokens = 0;
    std::size_t evaluationTokens = 0;
    double seconds = 0.0;
    bool bf16Calibration = false;  // the calibration passes multiplied in BF16 (--matmul)
};

}  // namespace qs::pipeline
