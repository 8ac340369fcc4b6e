#pragma once
// Hand-made checkpoints for the format tests: tensors are given as raw little-endian bytes, exactly
// as docs/formats/ lays them out, and written as model.safetensors (+ config.json and other JSON files)
// by a writer of our own, so the tests do not depend on io::CheckpointWriter.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/checkpoint.h"

namespace qs::formats::test {

class Fixture {
public:
    explicit Fixture(const std::string& name);  // a fresh folder under the temp directory
    ~Fixture();
    Fixture(const Fixture&) = delete;
    Fixture& operator=(const Fixture&) = delete;

    void add(const std::string& name, const std::string& dtype, std::vector<std::int64_t> shape,
             std::vector<std::uint8_t> bytes);
    void addWords(const std::string& name, std::vector<std::int64_t> shape,
                  const std::vector<std::uint32_t>& words);  // I32
    void addF32(const std::string& name, std::vector<std::int64_t> shape, const std::vector<float>& values);
    void addF16(const std::string& name, std::vector<std::int64_t> shape,
                const std::vector<float>& values);  // values must be exact in f16
    void addBF16(const std::string& name, std::vector<std::int64_t> shape,
                 const std::vector<float>& values);  // values must be exact in bf16
    void addI64(const std::string& name, std::vector<std::int64_t> shape, const std::vector<std::int64_t>& values);
    void addI32(const std::string& name, std::vector<std::int64_t> shape, const std::vector<std::int32_t>& values);

    void setQuantizationConfig(nlohmann::json q);  // config.json["quantization_config"]
    void addJsonFile(const std::string& fileName, nlohmann::json content);

    io::Checkpoint open();  // writes everything, then io::Checkpoint::open(folder)
    const std::filesystem::path& dir() const { return dir_; }

private:
    struct Raw {
        std::string name, dtype;
        std::vector<std::int64_t> shape;
        std::vector<std::uint8_t> bytes;
    };
    std::filesystem::path dir_;
    std::vector<Raw> tensors_;
    nlohmann::json config_;
    std::vector<std::pair<std::string, nlohmann::json>> files_;
};

// Independent decoders of the element formats (docs/formats/README.md, element types), for expected values.
float e4m3Value(std::uint8_t bits);
float e2m1Value(std::uint8_t nibble);
float e8m0Value(std::uint8_t bits);
std::uint8_t e4m3Code(float v);  // exact inverse for values that are E4M3 numbers (test inputs)

}  // namespace qs::formats::test
