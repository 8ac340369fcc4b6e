#pragma once
// SharedMemory: bytes QuantScope computes at opening and serves as tensor views (gemma3's GGUF norms read
// back shifted), in a shared anonymous mapping made read-only once filled. Private to qs_io.
// Why not a std::vector: TensorView::releasePages may be called on any view of a Checkpoint, and
// MADV_DONTNEED zero-fills private anonymous memory, while a shared mapping keeps its contents (the
// pages come back from shmem), as the file mappings of the other views do.
#include <cstddef>
#include <span>

namespace qs::io::detail {

class SharedMemory {
public:
    // Throws qs::Error when the mapping cannot be made. A size of 0 maps nothing.
    explicit SharedMemory(std::size_t size);
    ~SharedMemory();
    SharedMemory(const SharedMemory&) = delete;
    SharedMemory& operator=(const SharedMemory&) = delete;

    // Writable until seal().
    std::span<std::byte> writable();
    // From now on the bytes are read-only (a write through a stray pointer faults instead of corrupting).
    void seal();
    std::span<const std::byte> bytes() const { return {data_, size_}; }

private:
    std::byte* data_ = nullptr;
    std::size_t size_ = 0;
    bool sealed_ = false;
};

}  // namespace qs::io::detail
