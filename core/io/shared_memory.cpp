#include "shared_memory.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <sys/mman.h>

#include "qs/error.h"

namespace qs::io::detail {

SharedMemory::SharedMemory(std::size_t size) : size_(size) {
    if (size_ == 0) return;
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        throw Error("cannot map " + std::to_string(size_) + " bytes of memory (" + std::strerror(errno) + ")");
    data_ = static_cast<std::byte*>(p);
}

SharedMemory::~SharedMemory() {
    if (data_ != nullptr) ::munmap(data_, size_);
}

std::span<std::byte> SharedMemory::writable() {
    if (sealed_) throw Error("internal: shared memory written after it was sealed");
    return {data_, size_};
}

void SharedMemory::seal() {
    if (data_ != nullptr && !sealed_) ::mprotect(data_, size_, PROT_READ);  // protection only: failure changes no value
    sealed_ = true;
}

}  // namespace qs::io::detail
