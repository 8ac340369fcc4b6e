#pragma once
// Sign bytes as multipliers: kSignTable[b][j] is -1 when bit j of b is set, else +1. The decoders
// multiply by it (exact) instead of branching per weight, which keeps their loops vectorisable.
#include <array>

namespace qs::io::ggml {

inline constexpr auto kSignTable = [] {
    std::array<std::array<float, 8>, 256> t{};
    for (int b = 0; b < 256; ++b)
        for (int j = 0; j < 8; ++j) t[b][j] = (b >> j) & 1 ? -1.0f : 1.0f;
    return t;
}();

}  // namespace qs::io::ggml
