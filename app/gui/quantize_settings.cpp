#include "quantize_settings.h"

#include "qs/error.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/bundled_resources.h"
#include "qs/pipeline/calibration_text.h"

namespace qs::gui {
namespace {

pipeline::TokenSequences tokenize(const model::Tokenizer& tokenizer, const std::filesystem::path& file, int samples,
                                  int sequenceLength) {
    return pipeline::tokenWindows(tokenizer, pipeline::loadTexts(file), samples, sequenceLength, file.string());
}

}  // namespace

std::filesystem::path textFileFor(const QString& given, const io::Checkpoint& checkpoint, const char* name) {
    if (!given.isEmpty()) return given.toStdString();
    const std::filesystem::path beside = checkpoint.root() / name;
    if (std::filesystem::exists(beside)) return beside;
    if (auto bundled = pipeline::bundledResource(std::filesystem::path("demo") / name)) return *bundled;
    throw Error(std::string("no ") + name + " beside the checkpoint and none bundled: choose a file");
}

pipeline::JobPlan buildPlan(const QuantizeSettings& settings, const std::filesystem::path& checkpointPath) {
    if (settings.methods.empty()) throw Error("choose at least one method");
    const io::Checkpoint checkpoint = io::Checkpoint::open(checkpointPath);
    const model::Tokenizer tokenizer = model::Tokenizer::forCheckpoint(checkpoint);
    pipeline::JobPlan plan;
    plan.checkpoint = checkpointPath;
    for (const MethodChoice& m : settings.methods) plan.methods.push_back(pipeline::parseMethod(m.name, m.groupSize));
    plan.calibration = tokenize(tokenizer, textFileFor(settings.calibrationFile, checkpoint, "calibration.txt"),
                                settings.samples, settings.sequenceLength);
    plan.evaluation = tokenize(tokenizer, textFileFor(settings.evaluationFile, checkpoint, "eval.txt"),
                               settings.evaluationSamples, settings.sequenceLength);
    plan.perLayerKl = settings.perLayerKl;
    // Forcing CUDA without a device fails here, with selectBackend's reason, before any work starts.
    plan.backend = pipeline::selectBackend(settings.device).backend;
    plan.seed = settings.seed;
    return plan;
}

}  // namespace qs::gui
