#include "jobs/quantize_settings.h"

#include <algorithm>

#include "qs/pipeline/plan_builder.h"

namespace qs::gui {

pipeline::JobPlan buildPlan(const QuantizeSettings& settings, const std::filesystem::path& checkpointPath) {
    pipeline::PlanSettings plan;
    plan.checkpoint = checkpointPath;
    for (const MethodChoice& m : settings.methods) {
        pipeline::MethodSpec spec = pipeline::parseMethod(m.name, m.groupSize);
        spec.kvCacheFp8 = settings.kvCacheFp8 && !spec.gguf();  // llama.cpp picks its cache type when it runs
        plan.methods.push_back(std::move(spec));
    }
    plan.calibration = {settings.calibrationFile.toStdString(), settings.samples, settings.sequenceLength};
    plan.evaluation = {settings.evaluationFile.toStdString(), settings.evaluationSamples, settings.sequenceLength};
    plan.perLayerKl = settings.perLayerKl;
    plan.moeCalibrateAllExperts = settings.moeCalibrateAllExperts;
    plan.seed = settings.seed;
    plan.rotate = settings.rotate;
    plan.rotationSeed = settings.seed;
    plan.matmul = settings.matmul;
    // Only a GGUF method reads it (buildJobPlan refuses an imatrix with none to weigh).
    if (std::any_of(plan.methods.begin(), plan.methods.end(), [](const auto& m) { return m.ggufFileMix(); }))
        plan.imatrix = settings.imatrixFile.toStdString();
    pipeline::JobPlan built = pipeline::buildJobPlan(plan).plan;
    // Forcing CUDA without a device fails here, with selectBackend's reason, before any work starts.
    built.backend = pipeline::selectBackend(settings.device).backend;
    return built;
}

}  // namespace qs::gui
