#include "qs/formats/stored_bits.h"

#include <string_view>

namespace qs::formats {

double storedBitsPerWeight(const io::Checkpoint& checkpoint, const std::string& prefix, std::int64_t rows,
                           std::int64_t cols) {
    std::uint64_t bytes = 0;
    for (const io::CheckpointTensor& t : checkpoint.tensors()) {
        const std::string_view name = t.info->name;
        const bool part = name.size() > prefix.size() + 1 && name.starts_with(prefix) && name[prefix.size()] == '.' &&
                          name.find('.', prefix.size() + 1) == std::string_view::npos;
        if (part && !name.ends_with("bias")) bytes += t.info->byteSize();
    }
    const double weights = static_cast<double>(rows) * static_cast<double>(cols);
    return weights > 0.0 ? 8.0 * static_cast<double>(bytes) / weights : 0.0;
}

}  // namespace qs::formats
