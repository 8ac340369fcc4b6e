#include "qs/io/regular_file.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qs/error.h"

namespace qs::io {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, int err) {
    throw Error(path.string() + ": " + what + " (" + std::strerror(err) + ")");
}

std::string kindOf(mode_t mode) {
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a named pipe";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "not a regular file";
}

void requireRegular(const std::filesystem::path& path, const struct stat& st) {
    if (!S_ISREG(st.st_mode)) {
        const std::string kind = kindOf(st.st_mode);
        throw Error(path.string() + ": is " + kind + (kind.starts_with("not") ? "" : ", not a regular file") +
                    "; only regular files are read");
    }
}

}  // namespace

RegularFile::RegularFile(const std::filesystem::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail(path, "cannot open", errno);
    requireRegular(path, st);
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) fail(path, "cannot open", errno);
    if (::fstat(fd_, &st) != 0) {
        const int err = errno;
        ::close(fd_);
        fail(path, "cannot stat", err);
    }
    try {
        requireRegular(path, st);  // replaced between stat and open
    } catch (...) {
        ::close(fd_);
        throw;
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
}

RegularFile::~RegularFile() {
    if (fd_ >= 0) ::close(fd_);
}

std::string readRegularFile(const std::filesystem::path& path, std::uint64_t maxBytes, const std::string& what) {
    const RegularFile file(path);
    if (file.size() > maxBytes)
        throw Error(path.string() + ": is " + std::to_string(file.size()) + " bytes, more than the " +
                    std::to_string(maxBytes) + " bytes QuantScope reads as " + what);
    std::string text(static_cast<std::size_t>(file.size()), '\0');
    std::size_t done = 0;
    // A file that grows while it is read is cut at the size it had: the limit holds regardless.
    while (done < text.size()) {
        const ssize_t n = ::read(file.fd(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail(path, "read error", errno);
        if (n == 0) break;
        done += static_cast<std::size_t>(n);
    }
    text.resize(done);
    return text;
}

}  // namespace qs::io
