#pragma once
// Private to qs_pipeline: the weights a run calibrates, quantizes and measures against (the Job, the
// Hessian diagonals): a dense checkpoint's own, or a quantized checkpoint's decoded by its format
// (quantized_source.h).
#include <memory>

#include "qs/formats/format_info.h"
#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/model/weight_source.h"

namespace qs::pipeline {

// model::CheckpointWeights for a dense checkpoint; DecodedWeights (the weights `eval` reads of the same
// checkpoint) when some linear is quantized. Throws qs::Error for linears that do not decode.
std::shared_ptr<const model::WeightSource> sourceWeights(const io::Checkpoint& checkpoint,
                                                         const model::ModelConfig& config,
                                                         const formats::FormatInfo& format, bool allowNonFinite);

// `weights` with the plan's rotation folded in (model::RotatedWeights), or `weights` itself without --rotate.
// Throws qs::Error with model::rotationRefusal's line for a model that cannot fold it.
std::shared_ptr<const model::WeightSource> rotatedWhenAsked(std::shared_ptr<const model::WeightSource> weights,
                                                            const model::ModelConfig& config, bool rotate,
                                                            std::uint64_t seed);

}  // namespace qs::pipeline
