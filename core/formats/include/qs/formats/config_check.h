#pragma once
// config.json against the tensors it describes. A config whose hidden_size, layer count, heads,
// head_dim, vocab_size or model_type disagrees with the tensor shapes describes another model: the
// forward pass would run the wrong one, and `inspect` would report the wrong one without a word.
// Each check runs only where both sides exist (a key the config lacks, a tensor the checkpoint lacks).
#include <string>
#include <vector>

#include "qs/formats/format_info.h"
#include "qs/io/checkpoint.h"

namespace qs::formats {

// One line per disagreement, naming the config key and the tensor ("config.json: hidden_size 512,
// but model.embed_tokens.weight is [1000, 256]"); empty when they agree. `format` is
// detect(checkpoint) (the shapes of quantized linears come from its layers).
std::vector<std::string> configDisagreements(const io::Checkpoint& checkpoint, const FormatInfo& format);

// For whatever runs the model: throws qs::Error listing the disagreements, if any.
void requireConfigMatchesTensors(const io::Checkpoint& checkpoint, const FormatInfo& format);

}  // namespace qs::formats
