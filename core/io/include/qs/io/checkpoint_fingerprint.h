#pragma once
// CheckpointFingerprint: which checkpoint something was made from, from its headers only (no tensor
// data is read): the checkpoint's canonical folder and a 64-bit hash of every shard's file name and
// header bytes and of config.json. A result quantized from one checkpoint must never be written over
// another of the same shapes (a base model and its fine-tune), so the job stamps its result with the
// fingerprint and the exporter refuses a source whose fingerprint differs. The path tells two copies
// apart; the hash, a checkpoint rewritten in place with other headers or another config.
#include <cstdint>
#include <filesystem>
#include <string>

#include "qs/io/checkpoint.h"

namespace qs::io {

struct CheckpointFingerprint {
    std::filesystem::path path;    // the checkpoint's folder (a GGUF: its file), canonical (symlinks and ".." resolved)
    std::uint64_t headerHash = 0;  // the shards' names and header bytes, then config.json as parsed

    bool empty() const { return path.empty(); }
    std::string describe() const;  // "/models/base (headers 3f2a09c1d4e5b6a7)", for messages
    bool operator==(const CheckpointFingerprint&) const = default;
};

CheckpointFingerprint fingerprintOf(const Checkpoint& checkpoint);

}  // namespace qs::io
