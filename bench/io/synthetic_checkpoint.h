#pragma once
// Synthetic sharded checkpoints for the open benchmark: real headers of a Llama-shaped model
// (32 layers, 291 BF16 tensors) with the data left as holes (ftruncate), so that writing a 4 GB
// checkpoint takes milliseconds and no disk space. Opening must read headers only, so the holes
// are never touched.
#include <cstdint>
#include <filesystem>
#include <map>

namespace qs::bench {

struct SyntheticCheckpoint {
    std::filesystem::path dir;
    std::uint64_t dataBytes = 0;  // sum of all tensors' bytes
    std::size_t tensors = 0;
    std::size_t shards = 0;
};

// Writes model-0000i-of-0000n.safetensors shards of at most shardBytes, the index and config.json.
SyntheticCheckpoint writeSyntheticCheckpoint(const std::filesystem::path& dir, std::uint64_t targetBytes,
                                             std::uint64_t shardBytes);

// The checkpoints of one benchmark run, each written on first use into one temporary folder that
// is removed when the process exits normally.
class SyntheticCheckpoints {
public:
    static SyntheticCheckpoints& instance();
    const SyntheticCheckpoint& get(std::uint64_t targetBytes);
    ~SyntheticCheckpoints();

private:
    SyntheticCheckpoints();
    std::filesystem::path root_;
    std::map<std::uint64_t, SyntheticCheckpoint> checkpoints_;
};

}  // namespace qs::bench
