#pragma once
// Private to qs_analysis: runs a function over fixed-size chunks of a tensor's values, converted to
// f32 one chunk per thread at a time (TensorView::decode: converted, or decoded for GGUF types), so statistics of a tensor of any size need only a chunk-sized
// buffer per thread. Exceptions cannot leave an OpenMP region: the first one is kept and rethrown
// after the loop, and cancellation skips the remaining chunks.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <vector>

#include <omp.h>

#include "qs/cancel_token.h"
#include "qs/io/dtype.h"
#include "qs/io/tensor.h"

namespace qs::analysis::detail {

inline constexpr std::size_t kChunkElements = std::size_t{1} << 16;

inline std::size_t chunkCount(std::size_t elements, std::size_t chunkElements) {
    return (elements + chunkElements - 1) / chunkElements;
}

// fn(int thread, std::size_t chunk, std::size_t firstElement, std::span<const float> values).
// Chunks are spread statically, so chunk c always covers elements [c*chunkElements, ...).
// `thread` is below omp_get_max_threads(), for per-thread accumulators.
template <class Fn>
void forEachChunk(const io::TensorView& tensor, std::size_t chunkElements, const qs::CancelToken& cancel, Fn&& fn) {
    const auto elements = static_cast<std::size_t>(tensor.numel());
    const auto chunks = static_cast<std::int64_t>(chunkCount(elements, chunkElements));
    std::exception_ptr error;
    std::mutex errorMutex;
    std::atomic<bool> failed{false};

#pragma omp parallel
    {
        std::vector<float> buffer(std::min(chunkElements, elements));
        const int thread = omp_get_thread_num();
#pragma omp for schedule(static)
        for (std::int64_t c = 0; c < chunks; ++c) {
            if (failed.load(std::memory_order_relaxed) || cancel.cancelled()) continue;
            try {
                const std::size_t first = static_cast<std::size_t>(c) * chunkElements;
                const std::size_t count = std::min(chunkElements, elements - first);
                tensor.decode(first, count, buffer.data());
                fn(thread, static_cast<std::size_t>(c), first, std::span<const float>(buffer.data(), count));
            } catch (...) {
                std::lock_guard lock(errorMutex);
                if (!error) error = std::current_exception();
                failed.store(true);
            }
        }
    }
    if (error) std::rethrow_exception(error);
    cancel.throwIfCancelled();
}

// A TensorView over floats held in memory, so that every computation has a single entry point.
struct F32Tensor {
    io::TensorInfo info;
    explicit F32Tensor(std::span<const float> values, std::vector<std::int64_t> shape) {
        info.name = std::string("values");
        info.dtype = io::DType::F32;
        info.shape = std::move(shape);
        info.begin = 0;
        info.end = values.size_bytes();
        bytes = std::as_bytes(values);
    }
    std::span<const std::byte> bytes;
    io::TensorView view() const { return io::TensorView(info, bytes); }
};

}  // namespace qs::analysis::detail
