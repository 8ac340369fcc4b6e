#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "qs/error.h"

namespace qs::io::detail {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, int err) {
    throw Error(path.string() + ": " + what + " (" + std::strerror(err) + ")");
}

// Closes the descriptor on every path out of the constructor; the mapping outlives it.
struct FdGuard {
    int fd;
    ~FdGuard() { ::close(fd); }
};

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path, "cannot open", errno);
    FdGuard guard{fd};

    struct stat st {};
    if (::fstat(fd, &st) != 0) fail(path, "cannot stat", errno);
    if (!S_ISREG(st.st_mode)) throw Error(path.string() + ": not a regular file");
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ == 0) return;  // mmap refuses empty files; the parser reports it as truncated

    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) fail(path, "cannot memory-map", errno);
    data_ = static_cast<const std::byte*>(p);
}

MappedFile::~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace qs::io::detail
