#pragma once
// Writes safetensors files byte by byte, independently of qs::io, so that the CLI tests check the
// reader against the format rather than against our own writer, and can build malformed files.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace qs::test {

struct RawTensor {
    std::string name;
    std::string dtype;  // safetensors spelling: "F32", "BF16", ...
    std::vector<std::int64_t> shape;
    std::vector<std::byte> data;
};

std::vector<std::byte> f32Bytes(const std::vector<float>& values);
std::vector<std::byte> u16Bytes(const std::vector<std::uint16_t>& bits);  // BF16/F16 bit patterns

// The file image: 8-byte little-endian header length, JSON header (space-padded to 8 bytes), data.
std::vector<std::byte> safetensorsImage(const std::vector<RawTensor>& tensors);
void writeFile(const std::filesystem::path& path, const std::vector<std::byte>& bytes);

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

}  // namespace qs::test
