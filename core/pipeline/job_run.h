#pragma once
// Private to qs_pipeline: what one Job::run holds while it goes through the model a decoder layer at
// a time, shared by the files that do its parts: the layer loop (job_layer_loop.cpp), the work
// folder's save and resume (job_save_resume.cpp), the KL scoring (job_kl.cpp) and the orchestration
// that calls them in turn (job.cpp).
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "qs/analysis/kl_metrics.h"
#include "qs/cancel_token.h"
#include "qs/formats/format_info.h"
#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/model/transformer.h"
#include "qs/model/weight_source.h"
#include "qs/pipeline/compact_linear.h"
#include "qs/pipeline/gguf_export.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/job_result.h"
#include "qs/pipeline/layer_quantizer.h"
#include "qs/pipeline/layer_statistics.h"
#include "qs/pipeline/mixed_methods.h"
#include "qs/pipeline/work_folder.h"
#include "qs/progress.h"

#include "hidden_stream.h"

namespace qs::pipeline {

inline double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

using CompactLayer = std::map<std::string, std::shared_ptr<const CompactLinear>, std::less<>>;

// One method's quantized model, run side by side with the original.
struct MethodStream {
    MethodResult result;
    model::Transformer model;  // the original weights with this method's quantized linears in place
    HiddenStream calibration;  // its own calibration stream (true-sequential GPTQ / AWQ only)
    HiddenStream evaluation;
    bool ownCalibration = false;
    std::vector<CompactLayer> kept;  // the finished layers, codes packed; result.layers at the end
    GgufTypeChooser ggufTypes;       // GGUF methods: the type of each tensor; its model has their token_embd and output
    const MixedMethods* mix = nullptr;  // a method per linear instead of result.method for all
    // Results on disk (JobPlan::resultsOnDisk): a finished layer's linears without their codes, which
    // stay in the work folder (its `kept` entry is emptied once it is saved); result.stored at the end.
    std::vector<QuantizedLayer> headers = {};
    bool failed() const { return !result.error.empty(); }
    // The stream's model runs `module` of `layer` from the finished linear from now on.
    std::shared_ptr<const CompactLinear> install(int layer, const std::string& module,
                                                 std::shared_ptr<const CompactLinear> compact);
};

// A new run records its OpenMP team's size; a resumed one runs on the team it started on, whatever
// the free cores are now (WorkFolder::threadTeam says why), and says so when that differs. The
// caller's team size comes back when the run ends.
class RunThreadTeam {
public:
    RunThreadTeam(const WorkFolder& work, bool resume);
    ~RunThreadTeam();
    RunThreadTeam(const RunThreadTeam&) = delete;
    RunThreadTeam& operator=(const RunThreadTeam&) = delete;

    // Said with "resuming after layer ..." when the team differs from the caller's; else empty.
    const std::string& note() const { return note_; }

private:
    std::optional<int> callerTeam_;  // the caller's team size, while a resumed run uses its own
    std::string note_;
};

// The state of one Job::run: the checkpoint and the original model, the hidden-state streams that
// travel from layer to layer (the original's and each method's), what each layer leaves for the
// scoring at the end, and the work folder when the plan keeps one.
struct JobRun {
    // Opens the checkpoint, and the work folder (new, or resumed) when the plan names one.
    JobRun(const JobPlan& plan, std::set<std::string> spilled, const ProgressCallback& progress,
           const CancelToken& cancel, const ModuleLogCallback& moduleLog);
    JobRun(const JobRun&) = delete;
    JobRun& operator=(const JobRun&) = delete;

    // A model of the checkpoint whose forward passes run where the backend runs (on `source`, else the checkpoint's).
    model::Transformer makeModel(std::shared_ptr<const model::WeightSource> source = nullptr) const;
    void report(const std::string& stage, int step, int steps, double fraction, const std::string& message) const;

    bool resultsOnDisk() const { return work && plan.resultsOnDisk; }
    // The per-layer and per-group KL start from the original evaluation states at each layer's input.
    bool keepsLayerInputs() const { return plan.perLayerKl || plan.perGroupKl; }
    // With results on disk the per-layer KL's inputs (the original evaluation states at each layer's
    // input, one stream per layer) stay in the layers' records too, where saveLayer writes them anyway:
    // in RAM they would grow with the depth.
    bool layerInputsOnDisk() const { return resultsOnDisk(); }

    const JobPlan& plan;
    const std::set<std::string> spilled;  // the travelling streams that live in the work folder (stream_budget.h)
    const ProgressCallback& progress;
    const CancelToken& cancel;
    const ModuleLogCallback& moduleLog;
    io::Checkpoint checkpoint;
    model::ModelConfig config;
    formats::FormatInfo format;                          // a quantized source's linears are decoded (weights)
    std::shared_ptr<const model::WeightSource> weights;  // the source's, or its decoded ones (source_weights.h)
    // The calibration passes' GEMMs (--matmul bf16: model::bf16LayerMath); null: the backend's, as the
    // evaluation passes always use.
    std::shared_ptr<const model::LayerMath> calibrationMath;
    // A layer's statistics, their Hessians' products reading the inputs as the calibration's GEMMs do
    // (rounded to bfloat16 with --matmul bf16).
    LayerStatistics statistics() const {
        return LayerStatistics(plan.backend.get(), calibrationMath ? quant::GramInputs::Bf16 : quant::GramInputs::F32);
    }
    model::Transformer base;
    HiddenStream calibration;     // the original model's calibration stream (when a method quantizes from it)
    bool baseStatistics = false;  // some method quantizes from the original stream's statistics
    // GPTAQ: some method pairs its own calibration stream's linear inputs with the original stream's
    // (observeLayerPaired), so the original stream travels and moves past each layer only after them.
    bool fullPrecisionInputs = false;
    HiddenStream evaluation;  // the original model's evaluation stream (final hidden states at the end)
    std::vector<Hidden>
        layerInputs;  // the original evaluation hidden states at each layer's input (per-layer KL; empty once on disk)
    std::vector<MethodStream> streams;
    bool kvCache = false;                              // some method quantizes the KV cache
    std::vector<std::pair<float, float>> cacheScales;  // the FP8 KV cache's (k_scale, v_scale) per layer
    HiddenStream kvEvaluation;                         // the original model with its KV cache quantized
    std::optional<analysis::KlReport> cacheOnlyKl;
    std::optional<WorkFolder> work;                    // the state after each layer, when the plan keeps one
    std::shared_ptr<StoredLinearCache> storedLinears;  // results on disk: their linears, read back a layer at a time
    std::optional<RunThreadTeam> threadTeam;           // with a work folder; last, so that it ends first
};

}  // namespace qs::pipeline
