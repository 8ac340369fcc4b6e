#pragma once
// GgufWriter: writes one GGUF v3 file as llama.cpp's gguf_write does: header, metadata, tensor infos,
// then each tensor's data at an offset that is a multiple of the alignment, padded with zeros.
// Tensor data streams to a part file in a temporary sibling folder as tensors are added (at most one
// tensor is held, by the caller); finish() writes the header, appends the data and renames the file
// into place. On any error, or when the writer is destroyed unfinished, nothing is left behind.
// A measuring writer (GgufWriter::measuring) takes the same calls, writes nothing and says how large the
// file would be.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "qs/io/ggml_type.h"
#include "qs/io/gguf_value.h"

namespace qs::io {

struct GgufWriterOptions {
    std::uint32_t alignment = 32;  // a power of two; written as general.alignment when not 32
    bool overwrite = false;        // replace an existing destination file (only after a successful finish)
};

class GgufWriter {
public:
    // Throws qs::Error when `destination` exists (and !overwrite), is a folder, or its folder is missing.
    explicit GgufWriter(std::filesystem::path destination, GgufWriterOptions options = {});
    // A writer with no destination that counts instead of writing: tensor bytes given to it are neither read
    // nor checked against the shape (an empty span will do); finish() returns an empty path.
    static GgufWriter measuring(GgufWriterOptions options = {});
    ~GgufWriter();
    GgufWriter(GgufWriter&&) noexcept;
    GgufWriter(const GgufWriter&) = delete;
    GgufWriter& operator=(const GgufWriter&) = delete;

    // Sets (or replaces) a metadata value; keys are written in the order they were first set.
    void set(std::string key, GgufValue value);
    const GgufMetadata& metadata() const;

    // Appends a tensor: its GGUF name (at most 63 bytes), ggml type, row-major shape (stored
    // innermost first, at most 4 dimensions) and bytes, which must be exactly what ggml stores for
    // that type and shape (ggmlRowBytes per row of the last dimension).
    void addTensor(const std::string& name, GgmlType type, const std::vector<std::int64_t>& shape,
                   std::span<const std::byte> bytes);
    std::filesystem::path finish();  // returns the destination
    // The file's bytes for the metadata and tensors given so far: header, tensor infos, aligned data.
    std::uint64_t bytes() const;

private:
    GgufWriter();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace qs::io
