#pragma once
// GgufFile: one GGUF file (llama.cpp's format, versions 2 and 3), memory-mapped and validated
// strictly. Opening reads the header (metadata and tensor infos) only: its cost does not grow with
// the tensor data. docs/formats/gguf.md describes the layout and every check.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qs/io/gguf_value.h"
#include "qs/io/tensor.h"

namespace qs::io {

inline constexpr std::uint32_t kGgufDefaultAlignment = 32;  // when general.alignment is absent
inline constexpr std::size_t kGgufMaxTensorName = 63;       // ggml's GGML_MAX_NAME less its NUL
inline constexpr int kGgufMaxDims = 4;                      // GGML_MAX_DIMS

struct GgufHeader {
    std::uint32_t version = 3;
    std::uint32_t alignment = kGgufDefaultAlignment;
    GgufMetadata metadata;
    // In file order. Each has its GGUF name, `ggmlType` set, the row-major shape (GGUF lists the
    // dimensions innermost first; they are reversed here) and begin/end relative to dataOffset.
    std::vector<TensorInfo> tensors;
    std::uint64_t dataOffset = 0;  // where the (aligned) tensor data section starts in the file
};

// True when `bytes` begin with the GGUF magic.
bool hasGgufMagic(std::span<const std::byte> bytes);
// True when the file at `path` begins with the GGUF magic (false when it cannot be read).
bool isGgufFile(const std::filesystem::path& path);

// Parses and validates a whole file image. Throws one qs::Error naming `displayName` and what is
// wrong (and the key or tensor): truncation, bad magic or version, absurd counts or string lengths,
// unknown value or tensor types, nesting, alignment, tensor data outside the file or overlapping.
// Used by GgufFile::open and the fuzzer.
GgufHeader parseGguf(std::span<const std::byte> file, std::string_view displayName);

class GgufFile {
public:
    static GgufFile open(const std::filesystem::path& path);

    const std::filesystem::path& path() const;
    std::uint64_t fileSize() const;
    const GgufHeader& header() const;
    const GgufMetadata& metadata() const { return header().metadata; }
    const std::vector<TensorInfo>& tensors() const { return header().tensors; }

    const TensorInfo* find(std::string_view name) const;  // by GGUF name; nullptr when absent
    TensorView tensor(std::string_view name) const;       // throws qs::Error when absent
    // A view on the data of `info`, which may be a copy of one of tensors() under another name or
    // shape (the Checkpoint's Hugging Face naming): begin/end must lie inside the data section.
    TensorView view(const TensorInfo& info) const;

private:
    struct Impl;
    explicit GgufFile(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const Impl> impl_;
};

}  // namespace qs::io
