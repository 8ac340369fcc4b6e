#include "qs/pipeline/plan_builder.h"

#include <optional>
#include <utility>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/io/checkpoint.h"
#include "qs/model/tokenizer.h"
#include "qs/model/weight_rotation.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/model_checkpoint.h"
#include "qs/pipeline/quantized_source.h"
#include "qs/pipeline/run_text.h"

namespace qs::pipeline {
namespace {

// --rotate folds into a model whose family opts in (model::rotationRefusal), from a dense source, for the methods
// whose export writes the rotated tensors: refused before any text is read, in one line.
void requireRotatablePlan(const PlanSettings& settings, const io::Checkpoint& checkpoint,
                          const formats::FormatInfo& format) {
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(checkpoint);
    if (const std::string why = model::rotationRefusal(config); !why.empty()) throw Error(why);
    if (quantizedSource(format))
        throw Error("--rotate: the source is quantized already; rotate its dense original instead");
    for (const MethodSpec& m : settings.methods)
        if (m.kind == MethodKind::Gguf)
            throw Error("--rotate: " + m.label() +
                        ": a GGUF method quantizes token_embd and output too, which the rotation does not cover yet");
}

}  // namespace

BuiltPlan buildJobPlan(const PlanSettings& settings) {
    if (settings.methods.empty()) throw Error("choose at least one method");
    const io::Checkpoint checkpoint = openModelCheckpoint(settings.checkpoint, settings.allowNonFinite);
    const formats::FormatInfo format = formats::detect(checkpoint);
    requireDecodableSource(checkpoint, format);  // before any text is read: one clear line
    if (settings.rotate) requireRotatablePlan(settings, checkpoint, format);
    std::optional<model::Tokenizer> tokenizer;  // loaded for the first text read
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
    plan.rotate = settings.rotate;
    plan.rotationSeed = settings.rotationSeed;
    plan.moeCalibrateAllExperts = settings.moeCalibrateAllExperts;
    plan.seed = settings.seed;
    plan.allowNonFinite = settings.allowNonFinite;
    plan.matmul = settings.matmul;
    return built;
}

}  // namespace qs::pipeline
