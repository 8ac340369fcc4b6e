#pragma once
// The bits a checkpoint stores per weight of one linear: every tensor of the linear but its bias (the
// codes and their scales, zeros and g_idx; a GGUF tensor's ggml blocks), in bits, over out x in. The
// one meaning of "bits per weight" (docs/user-guide.md), here read from a file's own tensors.
#include <cstdint>
#include <string>

#include "qs/io/checkpoint.h"

namespace qs::formats {

// `prefix` is the linear's module prefix ("model.layers.0.mlp.down_proj"), `rows` x `cols` its
// [out, in]; its parts are the tensors "<prefix>.<part>". Zero when it stores none.
double storedBitsPerWeight(const io::Checkpoint& checkpoint, const std::string& prefix, std::int64_t rows,
                           std::int64_t cols);

}  // namespace qs::formats
