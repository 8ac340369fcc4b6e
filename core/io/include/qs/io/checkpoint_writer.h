#pragma once
// CheckpointWriter: streams tensors into shards of at most maxShardBytes, then writes the index
// (when sharded), config.json and the copied tokenizer/generation files. Everything goes into a
// temporary sibling folder that is renamed into place by finish(); on any error, or when the writer
// is destroyed unfinished, the temporary folder is removed and nothing is left behind.
// After any failed call the writer is spent: later calls throw, and nothing is written.
// A measuring writer (CheckpointWriter::measuring) takes the same calls and writes nothing: it counts
// the bytes the files would have, exactly (an export's size before it is written).
// Layout: one shard is model.safetensors, several are model-0000k-of-0000N.safetensors plus
// model.safetensors.index.json; each header has __metadata__ {"format":"pt"} and is space-padded to
// a multiple of 8 bytes; tensor data is stored in insertion order (valid safetensors; the reference
// writer's alignment order would need all tensors before writing the first).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/dtype.h"

namespace qs::io {

struct CheckpointWriterOptions {
    std::uint64_t maxShardBytes = 5'000'000'000ULL;
    bool overwrite = false;  // replace an existing destination (only after a successful finish)
    // Llama 4 (Checkpoint::denseMlpBlock): tensors named "<layer>.mlp.{gate,up,down}_proj.*" are written as
    // "<layer>.<denseMlpBlock>.*", where the family stores them. Empty: names are written as given.
    std::string denseMlpBlock{};
};

// The bytes of what a writer has been given, as its files hold them.
struct WrittenBytes {
    // The .safetensors files: each shard's 8-byte length, padded header and tensor data (the open shard
    // as if closed now).
    std::uint64_t tensorFiles = 0;
    std::uint64_t otherFiles = 0;  // config.json, the index and every JSON or auxiliary file
    std::uint64_t total() const { return tensorFiles + otherFiles; }
};

class CheckpointWriter {
public:
    // Throws qs::Error when `destination` is inside (or equal to) `source`, or exists and !overwrite.
    CheckpointWriter(std::filesystem::path destination, CheckpointWriterOptions options = {},
                     std::optional<std::filesystem::path> source = std::nullopt);
    // A writer that writes nothing and counts what it would write: no destination, no temporary folder;
    // finish() returns an empty path. Tensor bytes and values given to it are neither read nor checked
    // against the shape (an empty span will do).
    static CheckpointWriter measuring(CheckpointWriterOptions options = {});
    ~CheckpointWriter();
    CheckpointWriter(CheckpointWriter&&) noexcept;
    CheckpointWriter(const CheckpointWriter&) = delete;
    CheckpointWriter& operator=(const CheckpointWriter&) = delete;

    void addTensor(const std::string& name, DType dtype, const std::vector<std::int64_t>& shape,
                   std::span<const std::byte> bytes);
    void addTensorF32(const std::string& name, DType dtype, const std::vector<std::int64_t>& shape,
                      std::span<const float> values);  // converted with convertFromF32
    void setConfig(nlohmann::json config);             // written as config.json
    void addJsonFile(const std::string& fileName, const nlohmann::json& content);
    // Copies tokenizer.json, tokenizer_config.json, special_tokens_map.json, tokenizer.model,
    // vocab/merges files, added_tokens.json, chat templates, generation_config.json and LICENSE/NOTICE
    // from `sourceDir` (or a file's folder) when present. Never config.json: see setConfig.
    void copyAuxiliaryFiles(const std::filesystem::path& sourceDir);
    std::filesystem::path finish();  // returns the final destination
    // What the files given so far hold (config.json once finished): exact, for a measuring writer too.
    WrittenBytes bytes() const;

private:
    CheckpointWriter();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace qs::io
