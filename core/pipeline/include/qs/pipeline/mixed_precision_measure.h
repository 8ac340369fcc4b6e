#pragma once
// The measurement pass of a mixed-precision allocation: every candidate method quantizes the whole
// model once (a Job with the candidates as its methods) and each fused group of linears
// (mixed_methods.h kFusedGroups) gets, per candidate, its cost (bits per weight, from the quantized
// linears themselves) and its damage under one of two sensitivity measures:
//   OutputError  Σ over the group's linears of the relative output error² on the calibration
//                inputs (‖(W−Q)X‖²/‖WX‖², from the Hessian the Job collects anyway): no extra passes.
//   LayerKl      the KL with only that layer quantized (the Job's per-layer KL: one forward pass of
//                the remaining layers per layer and candidate), shared among the layer's groups
//                by parameter count.
//   GroupKl      the KL with only that fused group quantized (the Job's per-group KL: one forward pass
//                of the rest of the model per group and candidate, four times layer-kl's passes).
//                Output error weighs every linear's relative error alike, and layer-kl shares a
//                layer's KL by size, so neither sees that (on the demo) the first layer's attention
//                costs more KL per bit than the second layer's MLP: the trades that beat a uniform
//                method at its own bits per weight are exactly those.
// Damages add over groups; the sum is turned into predicted KL by one factor fitted (least squares
// through the origin) to the candidates' measured uniform KL, so the frontier speaks in KL.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/job_result.h"
#include "qs/pipeline/method_spec.h"
#include "qs/progress.h"

namespace qs::pipeline {

enum class Sensitivity { OutputError, LayerKl, GroupKl };

Sensitivity parseSensitivity(std::string_view name);  // "output-error" | "layer-kl" | "group-kl"; throws qs::Error
std::string_view sensitivityName(Sensitivity s);

// One fused group of one decoder layer: what the allocator chooses a method for.
struct SensitivityGroup {
    int layer = 0;
    std::vector<std::string> modules;  // "self_attn.q_proj", ...
    std::int64_t params = 0;
    std::vector<double> bitsPerWeight;  // per candidate, weighted by the linears' sizes
    std::vector<double> damage;         // per candidate (see above)
};

struct SensitivityTable {
    Sensitivity measure = Sensitivity::OutputError;
    std::vector<MethodSpec> candidates;
    std::vector<SensitivityGroup> groups;
    std::vector<double> uniformKl;   // each candidate's measured mean KLD (NaN without evaluation)
    std::vector<double> uniformBpw;  // each candidate's bits per weight over the quantized linears
    double klPerDamage = 1.0;        // predicted KL = klPerDamage · Σ damage

    // Σ damage of the uniform choice of candidate c, times klPerDamage.
    double uniformPredictedKl(std::size_t c) const;
};

// The table from a finished measurement Job (its methods are the candidates, in order). Throws
// qs::Error naming the candidate that failed, or the measure's missing input (output errors need
// calibration, layer KL per-layer KL, group KL per-group KL).
SensitivityTable sensitivityFromResult(const JobResult& result, Sensitivity measure);

// Each candidate's bits per weight per fused group without the measurement pass, for refusing a
// budget before any work: each linear's shape (from the config) with at most 256 rows, quantized from
// random weights; GPTQ and AWQ as RTN on their grid, which stores the same minus act-order's
// permutation. The result is within 0.01 bit of, or below, what the pass measures. Damage is zero.
SensitivityTable bitsOnlyTable(const model::ModelConfig& config, const std::vector<MethodSpec>& candidates);

// Runs the measurement Job: `plan` with the candidates as its methods (and per-layer or per-group KL).
SensitivityTable measureSensitivity(JobPlan plan, const std::vector<MethodSpec>& candidates, Sensitivity measure,
                                    const ProgressCallback& progress, const CancelToken& cancel,
                                    JobResult* measured = nullptr);

}  // namespace qs::pipeline
