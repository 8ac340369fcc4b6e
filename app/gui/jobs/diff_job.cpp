#include "jobs/diff_job.h"

#include <utility>

namespace qs::gui {

bool DiffJob::start(CheckpointPtr a, CheckpointPtr b, CheckpointPtr original) {
    return launch([this, a = std::move(a), b = std::move(b), original = std::move(original)](
                      const qs::CancelToken& token, quint64 generation) {
        guarded(generation, [&] {
            const formats::LinearReader readerA(*a), readerB(*b);
            std::unique_ptr<formats::LinearReader> readerOriginal;
            if (original) readerOriginal = std::make_unique<formats::LinearReader>(*original);
            auto diff = std::make_shared<const formats::QuantizationDiff>(
                formats::diffQuantizations(readerA, readerB, readerOriginal.get(), progressPoster(generation), token));
            post(
                generation, [this, diff = DiffPtr(std::move(diff))] { emit finished(diff); }, true);
        });
    });
}

}  // namespace qs::gui
