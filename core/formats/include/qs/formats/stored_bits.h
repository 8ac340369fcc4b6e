#pragma once
// The bits a checkpoint stores per weight of one linear: every tensor of the linear but its bias (the
// codes and their scales, zeros and g_idx; a GGUF tensor's ggml blocks), in bits, over out x in. The
// one meaning of "bits per weight" (docs/user-guide.md), here read from a file's own tensors.
#include <cstdint>
#include <string>
#include <unordered_map>

#include "qs/formats/format_info.h"
#include "qs/io/checkpoint.h"

namespace qs::formats {

// The bytes of every module prefix's tensors "<prefix>.<part>" but biases, in one pass over the headers.
class StoredBytes {
public:
    explicit StoredBytes(const io::Checkpoint& checkpoint);
    // `prefix` is the linear's module prefix ("model.layers.0.mlp.down_proj"), `rows` x `cols` its
    // [out, in]. Zero when it stores nothing.
    double bitsPerWeight(const std::string& prefix, std::int64_t rows, std::int64_t cols) const;

private:
    std::unordered_map<std::string, std::uint64_t> bytes_;
};

// The same for one linear.
double storedBitsPerWeight(const io::Checkpoint& checkpoint, const std::string& prefix, std::int64_t rows,
                           std::int64_t cols);

// Over the quantized linears of the decoder layers (`format.layers`; an lm_head or a GGUF's output is not
// counted, as no method's row counts them), weighted by their weights: the bits per weight of a quantized
// file as a whole, what Results gives an evaluated checkpoint. NaN when it quantizes no decoder linear.
double quantizedBitsPerWeight(const io::Checkpoint& checkpoint, const FormatInfo& format);

}  // namespace qs::formats
