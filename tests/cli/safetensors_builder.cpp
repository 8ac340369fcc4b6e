#include "safetensors_builder.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace qs::test {

std::vector<std::byte> f32Bytes(const std::vector<float>& values) {
    std::vector<std::byte> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

std::vector<std::byte> u16Bytes(const std::vector<std::uint16_t>& bits) {
    std::vector<std::byte> bytes(bits.size() * sizeof(std::uint16_t));
    std::memcpy(bytes.data(), bits.data(), bytes.size());
    return bytes;
}

std::vector<std::byte> safetensorsImage(const std::vector<RawTensor>& tensors) {
    nlohmann::json header = nlohmann::json::object();
    std::uint64_t offset = 0;
    for (const RawTensor& t : tensors) {
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
        offset += t.data.size();
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::vector<std::byte> image(8);
    std::uint64_t length = text.size();
    for (int i = 0; i < 8; ++i) image[static_cast<std::size_t>(i)] = static_cast<std::byte>((length >> (8 * i)) & 0xFF);
    for (char c : text) image.push_back(static_cast<std::byte>(c));
    for (const RawTensor& t : tensors) image.insert(image.end(), t.data.begin(), t.data.end());
    return image;
}

void writeFile(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

TempDir::TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "qs_cli_test_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
}

TempDir::~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

}  // namespace qs::test
