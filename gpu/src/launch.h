#pragma once
// Grid sizes of the element-wise kernels: enough blocks to fill any device, grid-stride beyond.
#include <algorithm>
#include <cstdint>

namespace qs::gpu {

inline constexpr int kThreads = 256;

inline unsigned gridFor(std::int64_t items, int threads = kThreads) {
    const std::int64_t blocks = (items + threads - 1) / threads;
    return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, 65536));
}

}  // namespace qs::gpu
