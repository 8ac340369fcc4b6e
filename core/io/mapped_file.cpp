#include "mapped_file.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <sys/mman.h>

#include "qs/error.h"
#include "qs/io/regular_file.h"

namespace qs::io::detail {

MappedFile::MappedFile(const std::filesystem::path& path) {
    const RegularFile file(path);  // refuses FIFOs and devices before opening them; closed on return
    size_ = static_cast<std::size_t>(file.size());
    if (size_ == 0) return;  // mmap refuses empty files; the parser reports it as truncated

    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd(), 0);
    if (p == MAP_FAILED) throw Error(path.string() + ": cannot memory-map (" + std::strerror(errno) + ")");
    data_ = static_cast<const std::byte*>(p);
}

MappedFile::~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace qs::io::detail
