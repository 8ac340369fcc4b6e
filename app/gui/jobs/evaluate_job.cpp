#include "jobs/evaluate_job.h"

#include <utility>

#include "qs/formats/detect.h"
#include "qs/pipeline/run_text.h"

#include "text/results_format.h"

namespace qs::gui {

pipeline::CheckpointEvalPlan defaultEvalPlan(const std::filesystem::path& original,
                                             const std::filesystem::path& quantized) {
    const io::Checkpoint originalCheckpoint = io::Checkpoint::open(original);
    const io::Checkpoint quantizedCheckpoint = io::Checkpoint::open(quantized);
    const std::filesystem::path text = pipeline::resolveRunText(pipeline::TextRole::Evaluation, {}, originalCheckpoint);
    pipeline::CheckpointEvalPlan plan;
    plan.original = original;
    plan.quantized = quantized;
    plan.evaluation =
        pipeline::sharedTokenWindows(originalCheckpoint, quantizedCheckpoint, pipeline::loadTexts(text),
                                     pipeline::kCheckpointEvalSamples, pipeline::kCheckpointEvalSeqLen, text.string());
    return plan;
}

bool EvaluateJob::start(QString original, QString quantized) {
    return launch(
        [this, original = std::move(original), quantized = std::move(quantized)](
            const qs::CancelToken& token, quint64 generation) { run(original, quantized, token, generation); });
}

// On the worker thread; as in QuantizeJob::run, each post is dropped once cancel() came first.
void EvaluateJob::run(const QString& original, const QString& quantized, const qs::CancelToken& token,
                      quint64 generation) {
    guarded(generation, [&] {
        auto evaluation = std::make_shared<Evaluation>();
        evaluation->original = original;
        evaluation->quantized = quantized;
        {
            const io::Checkpoint checkpoint = io::Checkpoint::open(quantized.toStdString());
            evaluation->source = io::fingerprintOf(checkpoint);
            evaluation->label = evaluatedCheckpointLabel(formats::detect(checkpoint));
            evaluation->bytesOnDisk = checkpoint.summary().sizeOnDisk;
        }
        const pipeline::CheckpointEvalPlan plan = defaultEvalPlan(original.toStdString(), quantized.toStdString());
        token.throwIfCancelled();
        evaluation->result = pipeline::evaluateCheckpoints(plan, progressPoster(generation), token);
        post(
            generation, [this, done = EvaluationPtr(std::move(evaluation))] { emit finished(done); }, true);
    });
}

}  // namespace qs::gui
