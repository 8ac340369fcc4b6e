#pragma once
// Job: plan (methods x parameters) -> calibrate once -> quantize per method per layer -> evaluate
// per method (and per layer on request). Everything runs layer by layer: the decoder layers are
// loaded one at a time, and only hidden states travel between them.
//
// Streams. The original model's calibration hidden states give every layer's statistics (the
// Hessians of its linear inputs). GPTQ and AWQ are true-sequential by default: each keeps its own
// calibration stream, in which layer i+1 sees the outputs of the already quantized layer i. The
// evaluation text runs through the original model and through each quantized model side by side;
// the KL of their next-token distributions is accumulated at the end. Per-layer KL starts from the
// original hidden states at a layer's input, runs the quantized layer and then the original layers
// after it, so its cost grows with the remaining layers only.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/cancel_token.h"
#include "qs/pipeline/activation_calibration.h"
#include "qs/pipeline/backend.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/gguf_imatrix.h"
#include "qs/pipeline/job_result.h"
#include "qs/pipeline/matmul_choice.h"
#include "qs/pipeline/method_spec.h"
#include "qs/pipeline/mixed_methods.h"
#include "qs/pipeline/resource_estimate.h"
#include "qs/progress.h"

namespace qs::pipeline {

struct JobPlan {
    std::filesystem::path checkpoint;
    std::vector<MethodSpec> methods;
    std::vector<MixedMethods> mixed;  // a method per linear each; their results follow the methods'
    TokenSequences calibration;       // may be empty when no method needs it (no output errors then)
    TokenSequences evaluation;        // may be empty: no KL
    bool perLayerKl = false;
    bool perGroupKl = false;  // also the KL with one fused group (kFusedGroups) of one layer quantized
    bool trueSequential = true;
    std::uint64_t seed = 0;
    // --rotate: QuaRot's Hadamard rotations folded into the weights before any method quantizes them
    // (model::WeightRotation, seeded by rotationSeed). The rotated dense model computes the original's logits
    // (to f32 rounding), so it stands for the original as the KL's reference.
    bool rotate = false;
    std::uint64_t rotationSeed = 0;
    DeviceChoice device = DeviceChoice::Auto;     // where GPTQ, the float formats and the trellis run
    std::shared_ptr<const Backend> backend;       // when set, used as is (the CLI selects and reports it)
    MatmulChoice matmul = MatmulChoice::Auto;     // the calibration passes' GEMMs (matmul_choice.h)
    bool allowNonFinite = false;                  // else a source linear with NaN or Inf weights is refused
    ActivationCalibration activationCalibration;  // static input scales and KV-cache scales: max or a percentile
    // MoE: every expert's Hessian from every calibration token (the forward pass still routes as the
    // model does), as GPTQModel and llm-compressor offer; false: from the tokens routed to it only.
    bool moeCalibrateAllExperts = true;
    // A folder where the state after each finished layer is kept (WorkFolder); empty: none. With
    // `resume`, the run continues from the last complete layer a killed run left there. The folder is
    // the caller's to remove (WorkFolder::discard) once the result is delivered (exported, printed).
    std::filesystem::path workDir;
    bool resume = false;
    // With a work folder: each finished layer's codes stay only there (MethodResult::stored), so the
    // result's memory does not grow with depth; the folder must then outlive the result (the CLI's
    // --work-dir, and the GUI's run folder, which it holds for as long as the result lives). Without:
    // the result holds every layer in RAM.
    bool resultsOnDisk = false;
    // The memory the run may use (`--max-memory`), in bytes; 0: what is available (MemAvailable).
    // The travelling hidden states get what the rest of the run leaves of it; with a work folder, the
    // streams that do not fit live there and stream from disk a sequence at a time (the same result,
    // bit for bit); without one, a plan that does not fit is refused.
    std::uint64_t maxMemory = 0;
    // llama.cpp's importance matrix from a file (llama-quantize --imatrix): the GGUF methods weigh each
    // linear's columns by it instead of by the calibration's Σx² (which still gives output errors);
    // null: the calibration's, when there is calibration text.
    std::shared_ptr<const Imatrix> imatrix;
};

// What a work folder records of a plan, to refuse resuming a run with another one: the checkpoint's
// header fingerprint, every method's parameters, hashes of the token sequences, the seed and the
// switches that change the result, and whether a GPU computes it.
nlohmann::json planIdentity(const JobPlan& plan);

using ModuleLogCallback = std::function<void(const ModuleLog&)>;

class Job {
public:
    explicit Job(JobPlan plan);

    ResourceEstimate estimate() const;
    // What the plan asks of a device at once (Backend::peakDeviceBytes).
    DeviceWorkload deviceWorkload() const;
    // Throws qs::Error when the estimate does not fit in memory, or the device's peak in its free
    // memory (unless `force`), qs::Cancelled when
    // cancelled. A method that cannot be applied to this model's shapes is reported in its
    // MethodResult::error and the others go on.
    JobResult run(const ProgressCallback& progress, const CancelToken& cancel, const ModuleLogCallback& moduleLog = {},
                  bool force = false);

    const JobPlan& plan() const { return plan_; }

private:
    JobPlan plan_;
};

}  // namespace qs::pipeline
