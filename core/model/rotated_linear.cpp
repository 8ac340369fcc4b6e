#include "qs/model/rotated_linear.h"

#include "qs/error.h"
#include "qs/io/tensor_name.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/model_config.h"
#include "qs/model/weight_rotation.h"

namespace qs::model {

MatrixF rotatedLinearWeight(const io::Checkpoint& checkpoint, const std::string& tensor, std::uint64_t seed) {
    const ModelConfig config = ModelConfig::fromCheckpoint(checkpoint);
    const WeightRotation rotation(config, seed);
    const io::TensorName name = io::parseTensorName(tensor);
    const bool decoderWeight = name.layer >= 0 && name.layer < config.numLayers && name.part == "weight" &&
                               tensor == config.layerPrefix(name.layer) + name.module + ".weight";
    if (!decoderWeight) throw Error(tensor + " is no decoder linear's weight, which is what --rotate turns");
    LayerWeights layer = CheckpointWeights(checkpoint, config).layer(name.layer);
    rotation.rotateLayer(layer);
    MatrixF& weight = layer.linear(name.module).weight;  // throws naming a module that is no linear
    return std::move(weight);
}

}  // namespace qs::model
