#pragma once
// MappedFile: a whole file mapped read-only (POSIX mmap, MAP_PRIVATE). Private to qs_io.
#include <cstddef>
#include <filesystem>
#include <span>

namespace qs::io::detail {

class MappedFile {
public:
    // Throws qs::Error when the file cannot be opened, is not a regular file (io::RegularFile), or
    // cannot be mapped.
    explicit MappedFile(const std::filesystem::path& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    std::span<const std::byte> bytes() const { return {data_, size_}; }
    std::size_t size() const { return size_; }

private:
    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace qs::io::detail
