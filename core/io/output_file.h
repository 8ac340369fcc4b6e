#pragma once
// OutputFile: a new file written sequentially with POSIX calls, every short write and error turned
// into a qs::Error naming the file. Private to qs_io (used by the checkpoint and GGUF writers).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

namespace qs::io::detail {

class OutputFile {
public:
    // Creates the file; it must not exist yet (the writer only writes inside its own temp folder).
    explicit OutputFile(std::filesystem::path path);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void write(std::span<const std::byte> bytes);
    // Appends the whole content of `source` (kernel-side copy where the filesystem allows it).
    void append(const std::filesystem::path& source);
    void close();  // reports errors that a plain destructor would swallow

    const std::filesystem::path& path() const { return path_; }
    std::uint64_t size() const { return written_; }

private:
    std::filesystem::path path_;
    int fd_ = -1;
    std::uint64_t written_ = 0;
};

// A fresh empty folder next to `target` (".<name><tag>XXXXXX"), for a writer's work or for the old
// copy of a destination being replaced: on the same filesystem, so that renames into place are atomic.
std::filesystem::path makeSiblingDir(const std::filesystem::path& target, const char* tag);

}  // namespace qs::io::detail
