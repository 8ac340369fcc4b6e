#pragma once
// Numbers as people read them in a terminal: parameter counts (292.5K, 7.62B), byte sizes in
// binary units (1.50 GiB), digit grouping (7,615,616,512) and tensor shapes ([4096, 11008]).
#include <cstdint>
#include <string>
#include <vector>

namespace qs::cli {

std::string formatCount(std::int64_t count);                      // 999, 292.5K, 124.44M, 7.62B, 1.23T
std::string formatBytes(std::uint64_t bytes);                     // 512 B, 1.00 KiB, 15.23 GiB
std::string formatGrouped(std::int64_t value);                    // 7,615,616,512
std::string formatShape(const std::vector<std::int64_t>& shape);  // [4096, 11008]; [] for a scalar
std::string formatNumber(double value);                           // %.6g, "nan"/"inf"/"-inf" for non-finite

}  // namespace qs::cli
