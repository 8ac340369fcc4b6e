#include "qs/pipeline/model_checkpoint.h"

#include <string>
#include <vector>

#include "qs/analysis/tensor_stats.h"
#include "qs/error.h"
#include "qs/finite_weights.h"
#include "qs/formats/config_check.h"
#include "qs/formats/detect.h"
#include "qs/formats/serving_quantization.h"

namespace qs::pipeline {

void requireFiniteDenseLinears(const io::Checkpoint& checkpoint, const formats::FormatInfo& format, bool allow) {
    if (allow) return;
    for (const auto& prefix : format.denseLinears) {
        const io::TensorView view = checkpoint.tensor(prefix + ".weight");
        // Streamed in chunks on all threads: an lm_head in f32 would be gigabytes.
        const auto stats = analysis::computeTensorStats(std::vector<io::TensorView>{view});
        // The scan read every page of the model: let them go, or the whole checkpoint stays resident
        // (in RSS) for the rest of the run, as much as the run itself on a deep model.
        view.releasePages();
        requireFiniteCount(stats[0].nanCount + stats[0].infCount, stats[0].count, checkpoint.root().string(), prefix,
                           false);
    }
}

io::Checkpoint openModelCheckpoint(const std::filesystem::path& path, bool allowNonFinite) {
    io::Checkpoint checkpoint = io::Checkpoint::open(path);
    const formats::FormatInfo format = formats::detect(checkpoint);
    formats::requireConfigMatchesTensors(checkpoint, format);
    requireFiniteDenseLinears(checkpoint, format, allowNonFinite);
    formats::readServingScales(checkpoint);  // a zero, negative, NaN or misshapen activation / KV scale is refused here
    return checkpoint;
}

}  // namespace qs::pipeline
