#include "fixture.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <unistd.h>

#include "qs/io/dtype.h"

namespace qs::formats::test {

namespace {

template <typename T>
std::vector<std::uint8_t> asBytes(const std::vector<T>& v) {
    std::vector<std::uint8_t> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

void writeJson(const std::filesystem::path& path, const nlohmann::json& j) {
    std::ofstream out(path);
    out << j.dump(2);
}

}  // namespace

Fixture::Fixture(const std::string& name)
    : dir_(std::filesystem::temp_directory_path() / ("qs_formats_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    config_ = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}};
}

Fixture::~Fixture() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

void Fixture::add(const std::string& name, const std::string& dtype, std::vector<std::int64_t> shape,
                  std::vector<std::uint8_t> bytes) {
    tensors_.push_back({name, dtype, std::move(shape), std::move(bytes)});
}

void Fixture::addWords(const std::string& name, std::vector<std::int64_t> shape,
                       const std::vector<std::uint32_t>& words) {
    add(name, "I32", std::move(shape), asBytes(words));
}

void Fixture::addF32(const std::string& name, std::vector<std::int64_t> shape, const std::vector<float>& values) {
    add(name, "F32", std::move(shape), asBytes(values));
}

void Fixture::addF16(const std::string& name, std::vector<std::int64_t> shape, const std::vector<float>& values) {
    std::vector<std::uint16_t> h;
    for (const float v : values) {
        h.push_back(io::f32ToF16(v));
        if (io::f16ToF32(h.back()) != v) throw std::logic_error(name + ": test value not exact in f16");
    }
    add(name, "F16", std::move(shape), asBytes(h));
}

void Fixture::addBF16(const std::string& name, std::vector<std::int64_t> shape, const std::vector<float>& values) {
    std::vector<std::uint16_t> h;
    for (const float v : values) {
        std::uint32_t u;
        std::memcpy(&u, &v, 4);
        if ((u & 0xFFFFu) != 0) throw std::logic_error(name + ": test value not exact in bf16");
        h.push_back(static_cast<std::uint16_t>(u >> 16));
    }
    add(name, "BF16", std::move(shape), asBytes(h));
}

void Fixture::addI64(const std::string& name, std::vector<std::int64_t> shape,
                     const std::vector<std::int64_t>& values) {
    add(name, "I64", std::move(shape), asBytes(values));
}

void Fixture::addI32(const std::string& name, std::vector<std::int64_t> shape,
                     const std::vector<std::int32_t>& values) {
    add(name, "I32", std::move(shape), asBytes(values));
}

void Fixture::setQuantizationConfig(nlohmann::json q) { config_["quantization_config"] = std::move(q); }

void Fixture::addJsonFile(const std::string& fileName, nlohmann::json content) {
    files_.emplace_back(fileName, std::move(content));
}

io::Checkpoint Fixture::open() {
    // safetensors: u64 header length, JSON header padded with spaces to 8 bytes, contiguous data.
    nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
    std::uint64_t offset = 0;
    for (const auto& t : tensors_) {
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
        offset += t.bytes.size();
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::ofstream out(dir_ / "model.safetensors", std::ios::binary);
    const std::uint64_t n = text.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& t : tensors_)
        out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    out.close();
    writeJson(dir_ / "config.json", config_);
    for (const auto& [name, content] : files_) writeJson(dir_ / name, content);
    return io::Checkpoint::open(dir_);
}

float e4m3Value(std::uint8_t bits) {
    const float sign = (bits & 0x80) ? -1.0f : 1.0f;
    const int exponent = (bits >> 3) & 0xF, mantissa = bits & 0x7;
    if (exponent == 0xF && mantissa == 0x7) return std::nanf("");
    if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa) / 8.0f, -6);
    return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
}

float e2m1Value(std::uint8_t nibble) {
    static constexpr float kValues[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    return ((nibble & 8) ? -1.0f : 1.0f) * kValues[nibble & 7];
}

float e8m0Value(std::uint8_t bits) { return bits == 0xFF ? std::nanf("") : std::ldexp(1.0f, bits - 127); }

std::uint8_t e4m3Code(float v) {
    for (int b = 0; b < 256; ++b)
        if (e4m3Value(static_cast<std::uint8_t>(b)) == v && !(v == 0.0f && b == 0x80))
            return static_cast<std::uint8_t>(b);
    throw std::logic_error("test value is not an E4M3 number");
}

}  // namespace qs::formats::test
