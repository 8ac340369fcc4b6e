#pragma once
// Bits per weight of a GGUF checkpoint, the one definition `inspect` and the app share
// (docs/user-guide.md): the bits the decoder's linear weights store per weight, blocks' scales
// included; beside it the figure over every tensor (embeddings, output, norms) and each ggml type's.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "qs/io/checkpoint.h"

namespace qs::io {

// Tensors of one kind: how many, their weights and the bytes they store.
struct StoredBits {
    std::string type;  // TensorInfo::typeName() where it counts one type: "q4_K", "f16", ...
    std::size_t tensors = 0;
    std::int64_t elements = 0;
    std::uint64_t bytes = 0;

    void add(const TensorInfo& t);
    double bitsPerWeight() const {
        return elements > 0 ? 8.0 * static_cast<double>(bytes) / static_cast<double>(elements) : 0.0;
    }
};

struct GgufBitsPerWeight {
    StoredBits decoderLinears;       // every decoder layer's linear weights (not a vision tower's): "bits per weight"
    StoredBits allTensors;           // every tensor
    std::vector<StoredBits> byType;  // by type name
};

// Over the checkpoint's tensors (Hugging Face names; a stacked expert tensor counts as its experts).
GgufBitsPerWeight ggufBitsPerWeight(const Checkpoint& checkpoint);

// Whether `t` is one of the decoder linears' weights that bits per weight counts.
bool countsInBitsPerWeight(const CheckpointTensor& t);

}  // namespace qs::io
