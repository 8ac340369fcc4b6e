#pragma once
// SafetensorsFile: one .safetensors file, memory-mapped, validated exactly as the reference
// implementation validates it (docs/formats/safetensors.md). Opening reads the header only.
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qs/io/tensor.h"

namespace qs::io {

struct SafetensorsHeader {
    std::vector<TensorInfo> tensors;              // sorted by data offset
    std::map<std::string, std::string> metadata;  // __metadata__ (absent or null -> empty)
    std::uint64_t headerLength = 0;               // N, the JSON's byte length
    std::uint64_t dataLength() const { return tensors.empty() ? 0 : tensors.back().end; }
};

// Parses and validates a whole file image (8-byte length, JSON header, byte buffer). Throws
// qs::Error naming `displayName` and, where it applies, the tensor. Used by open() and the fuzzer.
SafetensorsHeader parseSafetensors(std::span<const std::byte> file, std::string_view displayName);

class SafetensorsFile {
public:
    static SafetensorsFile open(const std::filesystem::path& path);

    const std::filesystem::path& path() const;
    std::uint64_t fileSize() const;
    const SafetensorsHeader& header() const;
    // The file's first 8 + N bytes (the length and the JSON header) as they are on disk.
    std::span<const std::byte> headerBytes() const;
    const std::vector<TensorInfo>& tensors() const { return header().tensors; }
    const std::map<std::string, std::string>& metadata() const { return header().metadata; }

    const TensorInfo* find(std::string_view name) const;  // nullptr when absent
    TensorView tensor(std::string_view name) const;       // throws qs::Error when absent
    TensorView view(const TensorInfo& info) const;

private:
    struct Impl;
    explicit SafetensorsFile(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const Impl> impl_;
};

}  // namespace qs::io
