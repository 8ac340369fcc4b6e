#pragma once
// Private to qs_pipeline: one expert of gpt-oss's stacked experts ("...mlp.experts.gate_up_proj" with its
// "_bias"), as the forward pass holds it: [out, in] and its bias. From the float tensor [E, in, out] that
// transformers holds, or else decoded from the checkpoint's own format (gpt-oss's MXFP4 blocks, as
// released). Shared by the GGUF writer and DecodedWeights.
#include <string>

#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/model/layer_weights.h"

namespace qs::pipeline {

// Throws qs::Error naming the tensor when it is not `experts` stacked experts [E, in, out] with [E, out] biases.
model::Linear decodeStackedExpert(const io::Checkpoint& checkpoint, const formats::LinearReader& reader,
                                  const std::string& module, int experts, int expert);

}  // namespace qs::pipeline
