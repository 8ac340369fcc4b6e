#include "qs/formats/stored_bits.h"

#include <string_view>

namespace qs::formats {

StoredBytes::StoredBytes(const io::Checkpoint& checkpoint) {
    for (const io::CheckpointTensor& t : checkpoint.tensors()) {
        const std::string_view name = t.info->name;
        const auto dot = name.rfind('.');
        if (dot == std::string_view::npos || name.ends_with("bias")) continue;
        bytes_[std::string(name.substr(0, dot))] += t.info->byteSize();
    }
}

double StoredBytes::bitsPerWeight(const std::string& prefix, std::int64_t rows, std::int64_t cols) const {
    const auto it = bytes_.find(prefix);
    const double weights = static_cast<double>(rows) * static_cast<double>(cols);
    return it == bytes_.end() || weights <= 0.0 ? 0.0 : 8.0 * static_cast<double>(it->second) / weights;
}

double storedBitsPerWeight(const io::Checkpoint& checkpoint, const std::string& prefix, std::int64_t rows,
                           std::int64_t cols) {
    return StoredBytes(checkpoint).bitsPerWeight(prefix, rows, cols);
}

}  // namespace qs::formats
