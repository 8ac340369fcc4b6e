// The table of GGUF pre-tokenizer names and the tokenizer.json pre-tokenizers they stand for.
#include "tokenizer_gguf_pre.h"

#include <algorithm>
#include <array>
#include <initializer_list>

namespace qs::model {
namespace {

using nlohmann::json;

constexpr const char* kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Split by `regex`, then map bytes to the GPT-2 alphabet (as Qwen2 and Llama-3 files do).
json splitThenByteLevel(const char* regex) {
    return {
        {"type", "Sequence"},
        {"pretokenizers",
         json::array(
             {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}})}};
}

struct Entry {
    GgufPreTokenizer pre;
    std::initializer_list<std::string_view> aliases;  // other names llama.cpp maps to the same split
};

const std::array<Entry, 3>& table() {
    static const std::array<Entry, 3> entries = {{
        {{"gpt-2",
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}},
          nullptr,
          false,
          false},
         {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
          "modern-bert"}},
        {{"qwen2", splitThenByteLevel(kQwen2Split), {{"type", "NFC"}}, false, false},
         {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2"}},
        {{"llama-bpe", splitThenByteLevel(kLlama3Split), nullptr, true, true},
         {"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"}},
    }};
    return entries;
}

}  // namespace

std::optional<GgufPreTokenizer> ggufPreTokenizerNamed(std::string_view name) {
    for (const Entry& e : table())
        if (std::find(e.aliases.begin(), e.aliases.end(), name) != e.aliases.end()) return e.pre;
    return std::nullopt;
}

std::optional<GgufPreTokenizer> ggufPreTokenizerOfJson(const json& preTokenizer) {
    const auto sameSplit = [](const json& a, const json& b) {
        // trim_offsets only moves offsets, which tokenizing ids never uses.
        json x = a, y = b;
        for (json* j : {&x, &y}) {
            if (!j->is_object()) continue;
            j->erase("trim_offsets");
            if (j->contains("pretokenizers"))
                for (auto& step : (*j)["pretokenizers"])
                    if (step.is_object()) step.erase("trim_offsets");
        }
        return x == y;
    };
    for (const Entry& e : table())
        if (sameSplit(preTokenizer, e.pre.preTokenizer)) return e.pre;
    return std::nullopt;
}

}  // namespace qs::model
