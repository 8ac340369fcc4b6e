#pragma once
// The one JSON reader for what a checkpoint folder holds (config.json, the shard index, quantization
// configs, tokenizer files, safetensors headers): bounded in size (read through readRegularFile) and
// in nesting (a parser callback stops at maxDepth, so 100,000 nested arrays are refused before they
// are built; nlohmann's own recursion on such a value would overflow the stack). Every failure,
// nlohmann's included, is a qs::Error naming the source.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace qs::io {

// config.json, quantize_config.json, hf_quant_config.json, the index: real ones are kilobytes; the
// largest (per-layer mixed-precision configs, indexes of thousand-shard models) stay under a few MB.
inline constexpr std::uint64_t kMaxConfigJsonBytes = 64ull << 20;
// tokenizer.json of the largest vocabularies (Gemma's 262k tokens) is about 33 MB.
inline constexpr std::uint64_t kMaxTokenizerJsonBytes = 512ull << 20;
// A valid config nests 6 levels (quantization_config.config_groups.group_0.weights.observer_kwargs).
inline constexpr int kMaxJsonDepth = 64;

struct JsonLimits {
    std::uint64_t maxBytes = kMaxConfigJsonBytes;
    int maxDepth = kMaxJsonDepth;
    bool rejectDuplicateKeys = false;  // nlohmann keeps the last of two equal keys without a word
};

// Parses `text`; errors read "<source>: not valid JSON: ...", "<source>: nests deeper than N
// levels", "<source>: has the key 'k' twice".
nlohmann::json parseJson(std::string_view text, const std::string& source, const JsonLimits& limits = {});

// nlohmann's message without its "[json.exception.type_error.302] " tag, for messages that name the
// file and key themselves.
std::string jsonErrorText(const nlohmann::json::exception& e);

// readRegularFile (size limit, regular files only) then parseJson, with the path as the source.
nlohmann::json readJsonFile(const std::filesystem::path& path, const JsonLimits& limits = {});

}  // namespace qs::io
