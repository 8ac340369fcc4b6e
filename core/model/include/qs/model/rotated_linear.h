#pragma once
// One decoder linear's weight as --rotate quantizes it (its norm folded in, turned by the seed's rotations:
// weight_rotation.h), read from a dense checkpoint on its own: what the Outliers tab sets beside the weight as
// stored, to show the input channels' maxima before and after the rotation.
#include <cstdint>
#include <string>

#include "qs/io/checkpoint.h"
#include "qs/matrix.h"

namespace qs::model {

// `tensor` names a decoder linear's weight ("model.layers.3.self_attn.q_proj.weight", an expert's, a router's).
// Throws qs::Error with rotationRefusal's line for a model that cannot fold the rotation, and naming the tensor
// when it is no decoder linear's weight.
MatrixF rotatedLinearWeight(const io::Checkpoint& checkpoint, const std::string& tensor, std::uint64_t seed);

}  // namespace qs::model
