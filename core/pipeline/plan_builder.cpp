#include "qs/pipeline/plan_builder.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/io/checkpoint.h"
#include "qs/model/tokenizer.h"
#include "qs/model/weight_rotation.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/imatrix_map.h"
#include "qs/pipeline/model_checkpoint.h"
#include "qs/pipeline/quantized_source.h"
#include "qs/pipeline/run_text.h"

namespace qs::pipeline {
namespace {

// --rotate folds into a model whose family opts in (model::rotationRefusal), from a dense source: refused before
// any text is read, in one line. An imatrix file's Σx² are the unrotated linears' inputs, which no column of a
// rotated linear sees (the Job's own calibration measures the rotated inputs instead).
void requireRotatablePlan(const PlanSettings& settings, const io::Checkpoint& checkpoint,
                          const formats::FormatInfo& format) {
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(checkpoint);
    if (const std::string why = model::rotationRefusal(config); !why.empty()) throw Error(why);
    if (quantizedSource(format))
        throw Error("--rotate: the source is quantized already; rotate its dense original instead");
    if (!settings.imatrix.empty())
        throw Error(
            "--rotate: --imatrix weighs the unrotated linears' input columns, which a rotated linear does not "
            "have; let the calibration text weigh the rotated ones");
}

}  // namespace

namespace {

// The imatrix a GGUF method is to weigh its linears by: one that names none of this model's linears
// (another model's, or another architecture's names) is refused before any work, as llama-quantize
// would quantize with no weighting at all.
std::shared_ptr<const Imatrix> readImatrixFor(const std::filesystem::path& path, const std::vector<MethodSpec>& methods,
                                              const io::Checkpoint& checkpoint) {
    if (std::none_of(methods.begin(), methods.end(), [](const MethodSpec& m) { return m.ggufFileMix(); }))
        throw Error("--imatrix weighs the GGUF methods (q4_k_m, q6_k, ...) and none is asked for");
    auto imatrix = std::make_shared<const Imatrix>(Imatrix::read(path));
    const ImatrixCoverage coverage =
        imatrixCoverage(*imatrix, checkpoint, model::ModelConfig::fromCheckpoint(checkpoint));
    if (coverage.covered > 0) return imatrix;
    throw Error(path.string() + ": no entry for this model's linears (" + coverage.firstWanted + " is not among its " +
                std::to_string(imatrix->entries().size()) + " entries, the first of which is " +
                imatrix->entries().begin()->first + ")");
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
    if (!settings.imatrix.empty()) plan.imatrix = readImatrixFor(settings.imatrix, settings.methods, checkpoint);
    return built;
}

}  // namespace qs::pipeline
