#pragma once
// EvaluateJob: File ▸ Evaluate against Original, the run of `quantscope-cli eval ORIGINAL QUANTIZED`
// with its defaults (pipeline::evaluateCheckpoints on the original's evaluation text) on a worker
// QThread, as QuantizeJob runs the Quantize panel's job: progress and the result come back to this
// object's thread as queued calls, cancel() stops the run at its next check, and whatever a run posts
// after cancel() is dropped, its end reported as cancelled(). With a second quantization open (the
// Side by side tab) one run evaluates both, one after the other, each reported by finished().
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>

#include <QString>
#include <QStringList>

#include "qs/cancel_token.h"
#include "qs/io/checkpoint_fingerprint.h"
#include "qs/pipeline/checkpoint_eval.h"

#include "jobs/worker_job.h"

namespace qs::gui {

// One evaluation as the Results page shows it and --json writes it.
struct Evaluation {
    QString original;  // the paths as named (the CLI's JSON records them so)
    QString quantized;
    io::CheckpointFingerprint source;  // of the quantized checkpoint evaluated
    // Of the checkpoint open when it ran (`source`, or the open one a second quantization is beside):
    // Results shows the evaluations of the open checkpoint only.
    io::CheckpointFingerprint openCheckpoint;
    QString label;  // its format, "gguf Q4_K_M" (evaluatedCheckpointLabel); beside another, "file: format"
    std::uint64_t bytesOnDisk = 0;
    // Its decoder linears' stored bits per weight (formats::quantizedBitsPerWeight); NaN when it quantizes none.
    double bitsPerWeight = std::numeric_limits<double>::quiet_NaN();
    pipeline::CheckpointEvalResult result;
};
using EvaluationPtr = std::shared_ptr<const Evaluation>;

class EvaluateJob : public WorkerJob {
    Q_OBJECT

public:
    explicit EvaluateJob(QObject* parent = nullptr) : WorkerJob(parent) {}

    // False (and nothing starts) while an evaluation is still running. `second`, when given, is
    // evaluated after `quantized`; both rows are then named by their file and format.
    bool start(QString original, QString quantized, QString second = {});

signals:
    void finished(const qs::gui::EvaluationPtr& evaluation);

private:
    void run(const QString& original, const QStringList& quantized, const qs::CancelToken& token, quint64 generation);
    EvaluationPtr evaluate(const QString& original, const QString& quantized, bool namedByFile,
                           const io::CheckpointFingerprint& openCheckpoint, const qs::ProgressCallback& progress,
                           const qs::CancelToken& token);
};

// The plan `quantscope-cli eval ORIGINAL QUANTIZED` runs without options: the original's evaluation
// text (resolveRunText), kCheckpointEvalSamples windows of kCheckpointEvalSeqLen tokens shared by both.
pipeline::CheckpointEvalPlan defaultEvalPlan(const std::filesystem::path& original,
                                             const std::filesystem::path& quantized);

}  // namespace qs::gui
