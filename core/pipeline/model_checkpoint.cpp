#include "qs/pipeline/model_checkpoint.h"

#include <string>
#include <vector>

#include "qs/analysis/tensor_stats.h"
#include "qs/finite_weights.h"
#include "qs/formats/config_check.h"
#include "qs/formats/detect.h"
#include "qs/formats/serving_quantization.h"

namespace qs::pipeline {

void requireFiniteDenseLinears(const io::Checkpoint& checkpoint, const formats::FormatInfo& format, bool allow) {
    if (allow) return;
    std::vector<io::TensorView> views;
    for (const auto& prefix : format.denseLinears) views.push_back(checkpoint.tensor(prefix + ".weight"));
    // Streamed in chunks on all threads: an lm_head in f32 would be gigabytes.
    const auto stats = analysis::computeTensorStats(views);
    for (std::size_t i = 0; i < stats.size(); ++i)
        requireFiniteCount(stats[i].nanCount + stats[i].infCount, stats[i].count, checkpoint.root().string(), format.denseLinears[i],
                           false);
}

io::Checkpoint openModelCheckpoint(const std::filesystem::path& path, bool allowNonFinite) {
    io::Checkpoint checkpoint = io::Checkpoint::open(path);
    const formats::FormatInfo format = formats::detect(checkpoint);
    formats::requireConfigMatchesTensors(checkpoint, format);
    requireFiniteDenseLinears(checkpoint, format, allowNonFinite);
    formats::readServingScales(checkpoint);   // a zero, negative, NaN or misshapen activation / KV scale is refused here
    return checkpoint;
}

}  // namespace qs::pipeline
