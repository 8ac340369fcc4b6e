#pragma once
// DiffJob: the Side by side tab's comparison of two quantizations (formats::diffQuantizations) on a
// worker QThread, as EvaluateJob runs an evaluation: progress per linear, Cancel, and the result back
// on this object's thread. Decoding both files of an 8B model takes minutes.
#include <memory>

#include "qs/formats/quantization_diff.h"
#include "qs/io/checkpoint.h"

#include "jobs/worker_job.h"

namespace qs::gui {

using DiffPtr = std::shared_ptr<const formats::QuantizationDiff>;

class DiffJob : public WorkerJob {
    Q_OBJECT

public:
    explicit DiffJob(QObject* parent = nullptr) : WorkerJob(parent) {}

    using CheckpointPtr = std::shared_ptr<const io::Checkpoint>;
    // `original` may be null (then no error against it). False while a comparison still runs.
    bool start(CheckpointPtr a, CheckpointPtr b, CheckpointPtr original);

signals:
    void finished(const qs::gui::DiffPtr& diff);
};

}  // namespace qs::gui
