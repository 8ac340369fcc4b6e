#include "jobs/evaluate_job.h"

#include <utility>

#include <QThread>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/pipeline/run_text.h"
#include "qs/thread_team.h"

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

EvaluateJob::EvaluateJob(QObject* parent) : QObject(parent) {}

EvaluateJob::~EvaluateJob() {
    if (!thread_) return;
    token_.cancel();
    thread_->wait();  // the worker posts to this object; it must be gone first
}

bool EvaluateJob::start(QString original, QString quantized) {
    if (thread_) return false;
    token_ = qs::CancelToken();
    clock_.start();
    thread_ = QThread::create([this, original = std::move(original), quantized = std::move(quantized), token = token_,
                               generation = ++generation_] {
        qs::sizeThreadTeamToFreeCores();  // this thread's OpenMP team, as the cores are now
        run(original, quantized, token, generation);
    });
    connect(thread_, &QThread::finished, this, &EvaluateJob::onThreadEnded);
    thread_->start();
    emit runningChanged(true);
    return true;
}

void EvaluateJob::cancel() {
    token_.cancel();
    if (thread_) ++generation_;
}

// On the worker thread; as in QuantizeJob::run, each post is dropped once cancel() came first.
void EvaluateJob::run(const QString& original, const QString& quantized, const qs::CancelToken& token,
                      quint64 generation) {
    auto post = [this, generation](auto call, bool last = false) {
        QMetaObject::invokeMethod(
            this,
            [this, generation, last, call = std::move(call)] {
                if (generation == generation_)
                    call();
                else if (last)
                    emit cancelled();
            },
            Qt::QueuedConnection);
    };
    try {
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
        evaluation->result = pipeline::evaluateCheckpoints(
            plan, [&](const qs::Progress& p) { post([this, p] { emit progressed(p); }); }, token);
        post([this, done = EvaluationPtr(std::move(evaluation))] { emit finished(done); }, true);
    } catch (const Cancelled&) {
        post([this] { emit cancelled(); }, true);
    } catch (const std::exception& e) {
        post([this, message = QString::fromStdString(e.what())] { emit failed(message); }, true);
    }
}

void EvaluateJob::onThreadEnded() {
    thread_->deleteLater();
    thread_ = nullptr;
    emit runningChanged(false);
}

}  // namespace qs::gui
