#include "experts/expert_overview.h"

#include <algorithm>
#include <memory>
#include <span>
#include <vector>

#include "qs/formats/linear_reader.h"
#include "qs/io/dtype.h"

namespace qs::gui {
namespace {

// Statistics of f32 values held in memory, named `name`.
analysis::WeightStats statsOf(const std::string& name, std::span<const float> values,
                              const analysis::LayerOverviewOptions& options) {
    io::TensorInfo info;
    info.name = name;
    info.dtype = io::DType::F32;
    info.shape = {static_cast<std::int64_t>(values.size())};
    info.end = values.size_bytes();
    return analysis::computeWeightStats(io::TensorView(info, std::as_bytes(values)), options.outlierSigma,
                                        options.cancel);
}

// Statistics of one expert's weights. They are of the values alone, so the stacked layout's [in, out]
// slice and the decoded [out, in] matrix need no transposing.
analysis::WeightStats expertStats(const io::Checkpoint& checkpoint, const ExpertCell& cell,
                                  const formats::LinearReader* reader, const analysis::LayerOverviewOptions& options) {
    if (cell.source == ExpertSource::Tensor)
        return analysis::computeWeightStats(checkpoint.tensor(cell.tensor), options.outlierSigma, options.cancel);
    if (cell.source == ExpertSource::StackedSlice) {
        // One expert's elements, decoded (a GGUF block type has no byte slice of its own).
        const io::TensorView stacked = checkpoint.tensor(cell.tensor);
        const auto perExpert = static_cast<std::size_t>(stacked.numel() / stacked.shape().front());
        std::vector<float> values(perExpert);
        stacked.decode(perExpert * static_cast<std::size_t>(cell.expert), perExpert, values.data());
        return statsOf(cell.tensor, values, options);
    }
    const MatrixF weight = reader->decodeF32(cell.linearPrefix, cell.expert);
    return statsOf(cell.tensor, std::span<const float>(weight.data(), static_cast<std::size_t>(weight.size())),
                   options);
}

}  // namespace

analysis::LayerOverview computeExpertOverview(const io::Checkpoint& checkpoint, const ExpertLayout& layout,
                                              const analysis::LayerOverviewOptions& options) {
    analysis::LayerOverview overview;
    overview.outlierSigma = options.outlierSigma;
    overview.layers = layout.layers;
    for (int e = 0; e < layout.experts; ++e) overview.modules.push_back("expert " + std::to_string(e));
    overview.cells.resize(overview.layers.size() * overview.modules.size());
    const bool decodes = std::any_of(layout.cells.begin(), layout.cells.end(),
                                     [](const ExpertCell& c) { return c.source == ExpertSource::StackedMxfp4; });
    const auto reader = decodes ? std::make_unique<formats::LinearReader>(checkpoint) : nullptr;
    const int steps = static_cast<int>(layout.cells.size());
    for (int i = 0; i < steps; ++i) {
        options.cancel.throwIfCancelled();
        const ExpertCell& cell = layout.cells[static_cast<std::size_t>(i)];
        if (options.progress)
            options.progress(
                {"overview", i + 1, steps, static_cast<double>(i) / steps,
                 cell.tensor +
                     (cell.source == ExpertSource::Tensor ? "" : " [expert " + std::to_string(cell.expert) + "]")});
        analysis::WeightStats stats = expertStats(checkpoint, cell, reader.get(), options);
        stats.tensor = cell.tensor;
        const auto row = static_cast<std::size_t>(
            std::lower_bound(overview.layers.begin(), overview.layers.end(), cell.layer) - overview.layers.begin());
        overview.cells[row * overview.modules.size() + static_cast<std::size_t>(cell.expert)] = std::move(stats);
    }
    if (options.progress && steps > 0) options.progress({"overview", steps, steps, 1.0, "done"});
    return overview;
}

}  // namespace qs::gui
