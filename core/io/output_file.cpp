#include "output_file.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qs/error.h"

namespace qs::io::detail {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, int err) {
    throw Error(path.string() + ": " + what + " (" + std::strerror(err) + ")");
}

}  // namespace

OutputFile::OutputFile(std::filesystem::path path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(path_, "cannot create", errno);
}

OutputFile::~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
}

void OutputFile::write(std::span<const std::byte> bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            fail(path_, "cannot write", errno);
        }
        bytes = bytes.subspan(static_cast<std::size_t>(n));
        written_ += static_cast<std::uint64_t>(n);
    }
}

void OutputFile::append(const std::filesystem::path& source) {
    const int in = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) fail(source, "cannot open", errno);
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{in};
    // copy_file_range avoids moving gigabytes through user space; fall back to read/write where the
    // kernel or filesystem does not offer it.
    while (true) {
        const ssize_t n = ::copy_file_range(in, nullptr, fd_, nullptr, std::size_t{1} << 30, 0);
        if (n == 0) return;
        if (n > 0) {
            written_ += static_cast<std::uint64_t>(n);
            continue;
        }
        if (errno == EINTR) continue;
        if (errno != ENOSYS && errno != EXDEV && errno != EINVAL && errno != EOPNOTSUPP)
            fail(path_, "cannot copy data into", errno);
        break;
    }
    std::vector<std::byte> buffer(std::size_t{8} << 20);
    while (true) {
        const ssize_t n = ::read(in, buffer.data(), buffer.size());
        if (n == 0) return;
        if (n < 0) {
            if (errno == EINTR) continue;
            fail(source, "cannot read", errno);
        }
        write(std::span<const std::byte>(buffer.data(), static_cast<std::size_t>(n)));
    }
}

void OutputFile::close() {
    if (fd_ < 0) return;
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail(path_, "cannot close", errno);
}

std::filesystem::path makeSiblingDir(const std::filesystem::path& target, const char* tag) {
    std::string name = ".";
    name += target.filename().string();
    name += tag;
    name += "XXXXXX";
    std::string pattern = (target.parent_path() / name).string();
    if (::mkdtemp(pattern.data()) == nullptr)
        throw Error(target.string() + ": cannot create a temporary folder next to it (" + std::strerror(errno) + ")");
    return pattern;
}

}  // namespace qs::io::detail
