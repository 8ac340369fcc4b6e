#include "job_run.h"

#include <omp.h>

#include "qs/formats/detect.h"
#include "qs/model/bf16_layer_math.h"
#include "qs/pipeline/matmul_choice.h"
#include "qs/pipeline/model_checkpoint.h"

#include "source_weights.h"

namespace qs::pipeline {

std::shared_ptr<const CompactLinear> MethodStream::install(int layer, const std::string& module,
                                                           std::shared_ptr<const CompactLinear> compact) {
    model.overrideLinear(layer, module, model::WeightProvider([compact] { return compact->effectiveWeight(); }));
    model.setServingQuantization(layer, module, compact->parts().input, compact->parts().cacheScale);
    return compact;
}

RunThreadTeam::RunThreadTeam(const WorkFolder& work, bool resume) {
    const int now = omp_get_max_threads();
    if (!resume) {
        work.recordThreadTeam(now);
        return;
    }
    const std::optional<int> started = work.threadTeam();
    if (!started || *started == now) return;
    callerTeam_ = now;
    omp_set_num_threads(*started);
    note_ = ", on the " + std::to_string(*started) + " threads it started on (not " + std::to_string(now) +
            "), so that it writes the same bits";
}

RunThreadTeam::~RunThreadTeam() {
    if (callerTeam_) omp_set_num_threads(*callerTeam_);
}

JobRun::JobRun(const JobPlan& plan, std::set<std::string> spilled, const ProgressCallback& progress,
               const CancelToken& cancel, const ModuleLogCallback& moduleLog)
    : plan(plan),
      spilled(std::move(spilled)),
      progress(progress),
      cancel(cancel),
      moduleLog(moduleLog),
      checkpoint(openModelCheckpoint(plan.checkpoint, plan.allowNonFinite)),
      config(model::ModelConfig::fromCheckpoint(checkpoint)),
      format(formats::detect(checkpoint)),
      weights(rotatedWhenAsked(sourceWeights(checkpoint, config, format, plan.allowNonFinite), config, plan.rotate,
                               plan.rotationSeed)),
      calibrationMath(selectMatmul(plan).bf16 ? model::bf16LayerMath() : nullptr),
      base(makeModel()) {
    if (!plan.workDir.empty())
        work.emplace(plan.resume ? WorkFolder::resume(plan.workDir, planIdentity(plan))
                                 : WorkFolder::start(plan.workDir, planIdentity(plan)));
    if (work) threadTeam.emplace(*work, plan.resume);
}

model::Transformer JobRun::makeModel(std::shared_ptr<const model::WeightSource> source) const {
    model::Transformer model(config, source ? std::move(source) : weights);
    if (plan.backend) model.setLayerMath(plan.backend->layerMath());
    model.setHookSeesAllExpertTokens(plan.moeCalibrateAllExperts);
    return model;
}

void JobRun::report(const std::string& stage, int step, int steps, double fraction, const std::string& message) const {
    if (progress) progress({stage, step, steps, fraction, message});
}

}  // namespace qs::pipeline
