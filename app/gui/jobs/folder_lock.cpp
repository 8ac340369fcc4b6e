#include "jobs/folder_lock.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qs/error.h"

namespace qs::gui {
namespace fs = std::filesystem;

namespace {

// Whether the open lock file is still the one named `file`: its last holder removes it on release,
// and a process that opened it just before holds a lock on a file nobody else can find.
bool stillNamed(int fd, const fs::path& file) {
    struct stat opened {};
    struct stat named {};
    return ::fstat(fd, &opened) == 0 && ::stat(file.c_str(), &named) == 0 && opened.st_ino == named.st_ino &&
           opened.st_dev == named.st_dev;
}

}  // namespace

fs::path FolderLock::fileOf(const fs::path& folder) { return fs::path(folder.string() + ".lock"); }

std::optional<FolderLock> FolderLock::acquire(const fs::path& folder) {
    const fs::path file = fileOf(folder);
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    for (int attempt = 0; attempt < 4; ++attempt) {
        const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) throw Error(file.string() + ": cannot create the lock file (" + std::strerror(errno) + ")");
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
            ::close(fd);
            return std::nullopt;  // held (EWOULDBLOCK)
        }
        if (stillNamed(fd, file)) return FolderLock(file, fd);
        ::close(fd);  // released and removed between our open and flock: take the new file
    }
    return std::nullopt;
}

FolderLock::FolderLock(FolderLock&& other) noexcept : file_(std::move(other.file_)), fd_(other.fd_) { other.fd_ = -1; }

FolderLock& FolderLock::operator=(FolderLock&& other) noexcept {
    if (this != &other) {
        release();
        file_ = std::move(other.file_);
        fd_ = other.fd_;
        other.fd_ = -1;
    }
    return *this;
}

FolderLock::~FolderLock() { release(); }

void FolderLock::release() noexcept {
    if (fd_ < 0) return;
    ::unlink(file_.c_str());  // while still held: see stillNamed
    ::close(fd_);
    fd_ = -1;
}

}  // namespace qs::gui
