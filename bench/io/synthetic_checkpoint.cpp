#include "synthetic_checkpoint.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace qs::bench {
namespace {

constexpr std::int64_t kLayers = 32;
constexpr std::int64_t kVocab = 32000;
constexpr std::uint64_t kElementBytes = 2;  // BF16

struct Spec {
    std::string name;
    std::vector<std::int64_t> shape;
    std::uint64_t bytes() const {
        std::uint64_t n = kElementBytes;
        for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
        return n;
    }
};

std::vector<Spec> llamaTensors(std::int64_t hidden) {
    const std::int64_t intermediate = (hidden * 8 / 3 + 63) / 64 * 64;
    std::vector<Spec> specs{{"model.embed_tokens.weight", {kVocab, hidden}}};
    for (std::int64_t l = 0; l < kLayers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        for (const char* m : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"})
            specs.push_back({p + m + ".weight", {hidden, hidden}});
        specs.push_back({p + "mlp.gate_proj.weight", {intermediate, hidden}});
        specs.push_back({p + "mlp.up_proj.weight", {intermediate, hidden}});
        specs.push_back({p + "mlp.down_proj.weight", {hidden, intermediate}});
        specs.push_back({p + "input_layernorm.weight", {hidden}});
        specs.push_back({p + "post_attention_layernorm.weight", {hidden}});
    }
    specs.push_back({"model.norm.weight", {hidden}});
    specs.push_back({"lm_head.weight", {kVocab, hidden}});
    return specs;
}

std::uint64_t totalBytes(const std::vector<Spec>& specs) {
    std::uint64_t total = 0;
    for (const Spec& s : specs) total += s.bytes();
    return total;
}

// The hidden size (a multiple of 64) whose model size comes closest to the target.
std::int64_t hiddenFor(std::uint64_t targetBytes) {
    std::int64_t hidden = 64;
    while (totalBytes(llamaTensors(hidden + 64)) <= targetBytes) hidden += 64;
    const std::uint64_t below = totalBytes(llamaTensors(hidden));
    const std::uint64_t above = totalBytes(llamaTensors(hidden + 64));
    return targetBytes - below <= above - targetBytes ? hidden : hidden + 64;
}

// Header written for real; the data region is a hole made by ftruncate.
void writeShard(const std::filesystem::path& path, const std::vector<Spec>& specs) {
    nlohmann::json header = nlohmann::json::object();
    std::uint64_t offset = 0;
    for (const Spec& s : specs) {
        header[s.name] = {{"dtype", "BF16"}, {"shape", s.shape}, {"data_offsets", {offset, offset + s.bytes()}}};
        offset += s.bytes();
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::string prefix(8, '\0');
    for (int i = 0; i < 8; ++i)
        prefix[static_cast<std::size_t>(i)] = static_cast<char>((text.size() >> (8 * i)) & 0xFF);
    {
        std::ofstream out(path, std::ios::binary);
        out << prefix << text;
        if (!out) throw std::runtime_error("cannot write " + path.string());
    }
    const int fd = ::open(path.c_str(), O_WRONLY);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(8 + text.size() + offset)) != 0) {
        if (fd >= 0) ::close(fd);
        throw std::runtime_error("cannot extend " + path.string());
    }
    ::close(fd);
}

std::vector<std::vector<Spec>> splitIntoShards(const std::vector<Spec>& specs, std::uint64_t shardBytes) {
    std::vector<std::vector<Spec>> shards(1);
    std::uint64_t used = 0;
    for (const Spec& s : specs) {
        if (used > 0 && used + s.bytes() > shardBytes) {
            shards.emplace_back();
            used = 0;
        }
        shards.back().push_back(s);
        used += s.bytes();
    }
    return shards;
}

std::string shardName(std::size_t index, std::size_t count) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", index + 1, count);
    return name;
}

void writeJson(const std::filesystem::path& path, const nlohmann::json& j) {
    std::ofstream out(path);
    out << j.dump(2);
}

}  // namespace

SyntheticCheckpoint writeSyntheticCheckpoint(const std::filesystem::path& dir, std::uint64_t targetBytes,
                                             std::uint64_t shardBytes) {
    const std::int64_t hidden = hiddenFor(targetBytes);
    const std::vector<Spec> specs = llamaTensors(hidden);
    const auto shards = splitIntoShards(specs, shardBytes);
    std::filesystem::create_directories(dir);

    nlohmann::json weightMap = nlohmann::json::object();
    for (std::size_t i = 0; i < shards.size(); ++i) {
        const std::string name = shardName(i, shards.size());
        writeShard(dir / name, shards[i]);
        for (const Spec& s : shards[i]) weightMap[s.name] = name;
    }
    const std::uint64_t total = totalBytes(specs);
    writeJson(dir / "model.safetensors.index.json", {{"metadata", {{"total_size", total}}}, {"weight_map", weightMap}});
    writeJson(dir / "config.json", {{"architectures", {"LlamaForCausalLM"}},
                                    {"model_type", "llama"},
                                    {"hidden_size", hidden},
                                    {"intermediate_size", (hidden * 8 / 3 + 63) / 64 * 64},
                                    {"num_hidden_layers", kLayers},
                                    {"vocab_size", kVocab},
                                    {"torch_dtype", "bfloat16"}});
    return {dir, total, specs.size(), shards.size()};
}

SyntheticCheckpoints& SyntheticCheckpoints::instance() {
    static SyntheticCheckpoints checkpoints;
    return checkpoints;
}

SyntheticCheckpoints::SyntheticCheckpoints() {
    std::string pattern = (std::filesystem::temp_directory_path() / "qs_bench_io_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = pattern;
}

SyntheticCheckpoints::~SyntheticCheckpoints() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
}

const SyntheticCheckpoint& SyntheticCheckpoints::get(std::uint64_t targetBytes) {
    constexpr std::uint64_t kShardBytes = 1'000'000'000ULL;  // 1 GB shards
    auto it = checkpoints_.find(targetBytes);
    if (it == checkpoints_.end()) {
        const auto dir = root_ / ("ckpt_" + std::to_string(targetBytes));
        it = checkpoints_.emplace(targetBytes, writeSyntheticCheckpoint(dir, targetBytes, kShardBytes)).first;
    }
    return it->second;
}

}  // namespace qs::bench
