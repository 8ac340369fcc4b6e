#include "qs/io/gguf_bits_per_weight.h"

#include <map>

namespace qs::io {

void StoredBits::add(const TensorInfo& t) {
    ++tensors;
    elements += t.numel();
    bytes += t.byteSize();
}

bool countsInBitsPerWeight(const CheckpointTensor& t) {
    return t.naming.role == TensorRole::Linear && t.naming.layer >= 0 && t.naming.part == "weight" &&
           !isTowerTensor(t.info->name);
}

GgufBitsPerWeight ggufBitsPerWeight(const Checkpoint& checkpoint) {
    GgufBitsPerWeight bits;
    std::map<std::string, StoredBits> byType;
    for (const CheckpointTensor& t : checkpoint.tensors()) {
        StoredBits& type = byType[t.info->typeName()];
        type.type = t.info->typeName();
        type.add(*t.info);
        bits.allTensors.add(*t.info);
        if (countsInBitsPerWeight(t)) bits.decoderLinears.add(*t.info);
    }
    for (auto& [name, type] : byType) bits.byType.push_back(std::move(type));
    return bits;
}

}  // namespace qs::io
