#include "jobs/evaluate_job.h"

#include <utility>

#include <QDir>
#include <QFileInfo>

#include "qs/formats/detect.h"
#include "qs/formats/stored_bits.h"
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

bool EvaluateJob::start(QString original, QString quantized, QString second) {
    QStringList checkpoints{std::move(quantized)};
    if (!second.isEmpty()) checkpoints << std::move(second);
    return launch(
        [this, original = std::move(original), checkpoints = std::move(checkpoints)](
            const qs::CancelToken& token, quint64 generation) { run(original, checkpoints, token, generation); });
}

// On the worker thread; as in QuantizeJob::run, each post is dropped once cancel() came first.
void EvaluateJob::run(const QString& original, const QStringList& quantized, const qs::CancelToken& token,
                      quint64 generation) {
    guarded(generation, [&] {
        const io::CheckpointFingerprint open = io::fingerprintOf(io::Checkpoint::open(quantized.front().toStdString()));
        const qs::ProgressCallback poster = progressPoster(generation);
        const auto n = static_cast<double>(quantized.size());
        for (qsizetype i = 0; i < quantized.size(); ++i) {
            // One bar over both evaluations: the second starts where the first ended.
            const auto progress = [&poster, i, n](const qs::Progress& p) {
                qs::Progress whole = p;
                whole.fraction = (static_cast<double>(i) + p.fraction) / n;
                poster(whole);
            };
            EvaluationPtr done = evaluate(original, quantized[i], quantized.size() > 1, open, progress, token);
            post(
                generation, [this, done] { emit finished(done); }, i + 1 == quantized.size());
        }
    });
}

EvaluationPtr EvaluateJob::evaluate(const QString& original, const QString& quantized, bool namedByFile,
                                    const io::CheckpointFingerprint& openCheckpoint,
                                    const qs::ProgressCallback& progress, const qs::CancelToken& token) {
    auto evaluation = std::make_shared<Evaluation>();
    evaluation->original = original;
    evaluation->quantized = quantized;
    evaluation->openCheckpoint = openCheckpoint;
    {
        const io::Checkpoint checkpoint = io::Checkpoint::open(quantized.toStdString());
        evaluation->source = io::fingerprintOf(checkpoint);
        const formats::FormatInfo format = formats::detect(checkpoint);
        evaluation->label = evaluatedCheckpointLabel(format);
        evaluation->bitsPerWeight = formats::quantizedBitsPerWeight(checkpoint, format);
        if (namedByFile)
            evaluation->label =
                QFileInfo(QDir::cleanPath(quantized)).fileName() + QStringLiteral(": ") + evaluation->label;
        evaluation->bytesOnDisk = checkpoint.summary().sizeOnDisk;
    }
    const pipeline::CheckpointEvalPlan plan = defaultEvalPlan(original.toStdString(), quantized.toStdString());
    token.throwIfCancelled();
    evaluation->result = pipeline::evaluateCheckpoints(plan, progress, token);
    return evaluation;
}

}  // namespace qs::gui
