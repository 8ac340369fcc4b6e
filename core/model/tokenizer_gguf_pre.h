#pragma once
// Private to qs_model: the byte-level BPE pre-tokenizers that GGUF names in tokenizer.ggml.pre and
// their Hugging Face tokenizer.json form. The split regexes are the ones in the tokenizer.json files
// of GPT-2, Qwen2/2.5/3 and Llama-3; llama.cpp runs the same splits (llama-vocab.cpp, with the
// case-insensitive group spelled out for its regex engine).
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace qs::model {

struct GgufPreTokenizer {
    std::string_view name;        // the name the GGUF writer stores
    nlohmann::json preTokenizer;  // tokenizer.json "pre_tokenizer"
    nlohmann::json normalizer;    // tokenizer.json "normalizer" (NFC for Qwen2), null when none
    bool ignoreMerges = false;    // Llama-3: a word that is a token is one token
    bool addsBos = false;         // llama.cpp's default add_bos for this pre-tokenizer
};

// The pre-tokenizer a GGUF name (or one of llama.cpp's aliases for it) stands for.
std::optional<GgufPreTokenizer> ggufPreTokenizerNamed(std::string_view name);
// The pre-tokenizer whose tokenizer.json form `preTokenizer` is, or nullopt.
std::optional<GgufPreTokenizer> ggufPreTokenizerOfJson(const nlohmann::json& preTokenizer);

}  // namespace qs::model
