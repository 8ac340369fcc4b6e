#pragma once
// Opening the files of a checkpoint as a hostile folder may lay them out: only regular files are
// read. A FIFO, socket, device (a config.json linked to /dev/zero) or folder is refused before it is
// opened, the open itself never blocks (O_NONBLOCK, in case one was swapped in after the check), and
// the open descriptor is checked again. Symbolic links are followed on purpose: the Hugging Face
// cache links every file of a snapshot to its blob.
#include <cstdint>
#include <filesystem>
#include <string>

namespace qs::io {

class RegularFile {
public:
    // Throws qs::Error naming the path when it cannot be opened or is not a regular file.
    explicit RegularFile(const std::filesystem::path& path);
    ~RegularFile();
    RegularFile(const RegularFile&) = delete;
    RegularFile& operator=(const RegularFile&) = delete;

    int fd() const { return fd_; }
    std::uint64_t size() const { return size_; }  // at the time of opening

private:
    int fd_ = -1;
    std::uint64_t size_ = 0;
};

// The whole content of a regular file of at most maxBytes (a longer one is refused, naming both
// sizes, before anything is read); `what` says what the file is for ("a JSON file", "a tokenizer file").
std::string readRegularFile(const std::filesystem::path& path, std::uint64_t maxBytes, const std::string& what);

}  // namespace qs::io
