#include "qs/formats/stored_bits.h"

#include <limits>
#include <map>
#include <string_view>

#include "qs/io/tensor_name.h"

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

double quantizedBitsPerWeight(const io::Checkpoint& checkpoint, const FormatInfo& format) {
    // A stacked expert tensor holds several linears under one prefix: its bytes over all their weights.
    std::map<std::string, double> weights;
    for (const LayerQuantInfo& layer : format.layers)
        if (io::parseTensorName(layer.ref.prefix + ".weight").layer >= 0)
            weights[layer.ref.prefix] += static_cast<double>(layer.rows) * static_cast<double>(layer.cols);
    const StoredBytes stored(checkpoint);
    double bits = 0.0, total = 0.0;
    for (const auto& [prefix, n] : weights) {
        bits += stored.bitsPerWeight(prefix, 1, 1);  // 8 x its bytes
        total += n;
    }
    return total > 0.0 ? bits / total : std::numeric_limits<double>::quiet_NaN();
}

double storedBitsPerWeight(const io::Checkpoint& checkpoint, const std::string& prefix, std::int64_t rows,
                           std::int64_t cols) {
    return StoredBytes(checkpoint).bitsPerWeight(prefix, rows, cols);
}

}  // namespace qs::formats
