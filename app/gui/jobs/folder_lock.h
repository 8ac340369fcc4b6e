#pragma once
// FolderLock: tells every QuantScope process that this one is using a folder (a run in progress
// there, or a shown result that reads from it), through an advisory lock (flock) on a file beside
// it, "<folder>.lock". The kernel drops the lock when the process ends, however it ends, so a
// crashed instance never leaves a folder marked in use; whoever takes the lock after it may clean up.
#include <filesystem>
#include <optional>

namespace qs::gui {

class FolderLock {
public:
    // The lock of `folder` (its parent is created when missing); nothing when another holder has it,
    // in this process or another. Throws qs::Error when the lock file cannot be created.
    static std::optional<FolderLock> acquire(const std::filesystem::path& folder);
    static std::filesystem::path fileOf(const std::filesystem::path& folder);

    FolderLock(FolderLock&& other) noexcept;
    FolderLock& operator=(FolderLock&& other) noexcept;
    FolderLock(const FolderLock&) = delete;
    FolderLock& operator=(const FolderLock&) = delete;
    ~FolderLock();  // releases the lock and removes its file

private:
    FolderLock(std::filesystem::path file, int fd) : file_(std::move(file)), fd_(fd) {}
    void release() noexcept;

    std::filesystem::path file_;
    int fd_ = -1;
};

}  // namespace qs::gui
