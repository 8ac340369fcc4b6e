#include "source_weights.h"

#include "qs/model/checkpoint_weights.h"
#include "qs/model/rotated_weights.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/quantized_source.h"

namespace qs::pipeline {

std::shared_ptr<const model::WeightSource> sourceWeights(const io::Checkpoint& checkpoint,
                                                         const model::ModelConfig& config,
                                                         const formats::FormatInfo& format, bool allowNonFinite) {
    if (quantizedSource(format))
        return std::make_shared<DecodedWeights>(checkpoint, config,
                                                formats::DecodeOptions{.allowNonFinite = allowNonFinite});
    return std::make_shared<model::CheckpointWeights>(
        checkpoint, config, model::CheckpointWeights::Options{.allowNonFinite = allowNonFinite});
}

std::shared_ptr<const model::WeightSource> rotatedWhenAsked(std::shared_ptr<const model::WeightSource> weights,
                                                            const model::ModelConfig& config, bool rotate,
                                                            std::uint64_t seed) {
    if (!rotate) return weights;
    return std::make_shared<model::RotatedWeights>(std::move(weights), model::WeightRotation(config, seed));
}

}  // namespace qs::pipeline
