#pragma once
// Helpers shared by the io tests: a temporary folder that cleans up after itself, and safetensors
// file images built byte by byte (so that malformed files can be made on purpose).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace qs::io::test {

// llama.cpp's tiny random Llama (tests/data/gguf/SOURCE.md): the GGUF the io tests read.
inline const std::filesystem::path kTinyLlamaGguf =
    std::filesystem::path(QS_TEST_DATA_DIR) / "gguf" / "llama-2-tiny-random.gguf";

class TempDir {
public:
    TempDir() {
        std::random_device rd;
        path_ = std::filesystem::temp_directory_path() / ("qs-io-test-" + std::to_string(rd()) + std::to_string(rd()));
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

// 8-byte little-endian length, the header text as given, then `dataBytes` bytes (0, 1, 2, ...).
inline std::vector<std::byte> safetensorsImage(const std::string& header, std::size_t dataBytes,
                                               std::uint64_t lengthField) {
    std::vector<std::byte> out(8);
    for (int i = 0; i < 8; ++i)
        out[static_cast<std::size_t>(i)] = static_cast<std::byte>((lengthField >> (8 * i)) & 0xFF);
    for (const char c : header) out.push_back(static_cast<std::byte>(c));
    for (std::size_t i = 0; i < dataBytes; ++i) out.push_back(static_cast<std::byte>(i & 0xFF));
    return out;
}

inline std::vector<std::byte> safetensorsImage(const std::string& header, std::size_t dataBytes) {
    return safetensorsImage(header, dataBytes, header.size());
}

inline void writeBytes(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void writeText(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

}  // namespace qs::io::test
