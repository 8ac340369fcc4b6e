#include "qs/pipeline/plan_builder.h"

#include <optional>
#include <utility>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/io/checkpoint.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/model_checkpoint.h"
#include "qs/pipeline/quantized_source.h"
#include "qs/pipeline/run_text.h"

namespace qs::pipeline {

BuiltPlan buildJobPlan(const PlanSettings& settings) {
    if (settings.methods.empty()) throw Error("choose at least one method");
    const io::Checkpoint checkpoint = openModelCheckpoint(settings.checkpoint, settings.allowNonFinite);
    const formats::FormatInfo format = formats::detect(checkpoint);
    requireDecodableSource(checkpoint, format);  // before any text is read: one clear line
    std::optional<model::Tokenizer> tokenizer;   // loaded for the first text read
    BuiltPlan built;
    built.quantizedSource = quantizedSource(format);
    auto read = [&](TextRole role, const TextChoice& choice, std::filesystem::path& file) -> TokenSequences {
        if (choice.samples <= 0) return {};
        file = resolveRunText(role, choice.file, checkpoint);
        if (!tokenizer) tokenizer = model::Tokenizer::forCheckpoint(checkpoint);
        return tokenWindows(*tokenizer, loadTexts(file), choice.samples, choice.sequenceLength, file.string());
    };
    JobPlan& plan = built.plan;
    plan.checkpoint = settings.checkpoint;
    plan.methods = settings.methods;
    plan.activationCalibration = settings.activationCalibration;
    plan.calibration = read(TextRole::Calibration, settings.calibration, built.calibrationFile);
    plan.evaluation = read(TextRole::Evaluation, settings.evaluation, built.evaluationFile);
    plan.perLayerKl = settings.perLayerKl;
    plan.trueSequential = settings.trueSequential;
    plan.moeCalibrateAllExperts = settings.moeCalibrateAllExperts;
    plan.seed = settings.seed;
    plan.allowNonFinite = settings.allowNonFinite;
    plan.matmul = settings.matmul;
    return built;
}

}  // namespace qs::pipeline
