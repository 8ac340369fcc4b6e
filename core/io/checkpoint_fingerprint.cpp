#include "qs/io/checkpoint_fingerprint.h"

#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "qs/io/gguf_file.h"

namespace qs::io {
namespace {

// FNV-1a, 64 bits: an identity check against mix-ups, not against an adversary.
class Fnv1a {
public:
    void add(std::span<const std::byte> bytes) {
        for (std::byte b : bytes) hash_ = (hash_ ^ static_cast<std::uint64_t>(b)) * kPrime;
    }
    void add(std::string_view text) { add(std::as_bytes(std::span(text.data(), text.size()))); }
    std::uint64_t value() const { return hash_; }

private:
    static constexpr std::uint64_t kPrime = 0x100000001b3ull;
    std::uint64_t hash_ = 0xcbf29ce484222325ull;
};

std::filesystem::path canonicalPath(const std::filesystem::path& path) {
    std::error_code ec;
    std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ec);
    if (ec) canonical = std::filesystem::absolute(path, ec).lexically_normal();
    return canonical;
}

// The path that opens this checkpoint again. A GGUF is its file (two GGUF files of one model often
// share a folder), and so is a lone safetensors file other than model.safetensors: its folder would
// open model.safetensors instead, or refuse to choose between two files. Otherwise the folder.
std::filesystem::path reopeningPath(const Checkpoint& checkpoint) {
    if (const GgufFile* gguf = checkpoint.gguf()) return gguf->path();
    const auto& shards = checkpoint.shards();
    if (shards.size() == 1 && shards.front().path().filename() != "model.safetensors") return shards.front().path();
    return checkpoint.root();
}

}  // namespace

std::string CheckpointFingerprint::describe() const {
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(headerHash));
    return path.string() + " (headers " + hash + ")";
}

CheckpointFingerprint fingerprintOf(const Checkpoint& checkpoint) {
    Fnv1a hash;
    for (const SafetensorsFile& shard : checkpoint.shards()) {
        // The file name separates two single-file checkpoints in one folder; '\0' ends it.
        hash.add(shard.path().filename().string());
        hash.add(std::string_view("\0", 1));
        hash.add(shard.headerBytes());
    }
    if (const GgufFile* gguf = checkpoint.gguf()) {
        // Its file name (two GGUF files of one model often share a folder), size and tensor table:
        // each tensor's name, ggml type, shape and offset.
        hash.add(gguf->path().filename().string());
        hash.add(std::to_string(gguf->fileSize()));
        for (const TensorInfo& t : gguf->tensors()) {
            hash.add(std::string_view("\0", 1));
            hash.add(t.name);
            hash.add(" " + std::to_string(t.ggmlType ? static_cast<int>(*t.ggmlType) : -1) + " " +
                     std::to_string(t.begin));
            for (const std::int64_t d : t.shape) hash.add(" " + std::to_string(d));
        }
    }
    hash.add(checkpoint.config().dump());
    return {canonicalPath(reopeningPath(checkpoint)), hash.value()};
}

}  // namespace qs::io
