#pragma once
// The BPE model: turns one pre-tokenized word into ids by starting from its characters and applying
// the lowest-ranked merge present until none applies, as Hugging Face's tokenizers crate does.
// Results are cached per word: natural text repeats its words, so most words are looked up once.
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "qs/model/tokenizer.h"

namespace qs::model {

// Hash for unordered maps keyed by std::string that are searched with std::string_view.
struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using Vocabulary = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;
using MergeList = std::vector<std::pair<std::string, std::string>>;  // in rank order

struct BpeOptions {
    std::optional<std::string> unkToken;  // the id for characters outside the vocabulary
    bool byteFallback = false;            // use <0xNN> tokens before falling back to unk
    bool fuseUnk = false;                 // consecutive unknown characters become one unk
    bool ignoreMerges = false;            // a word that is itself in the vocabulary is one token (Llama-3)
};

class BpeModel {
public:
    // Throws qs::Error naming `sourceName` when a merge refers to a token outside the vocabulary.
    BpeModel(Vocabulary vocab, const MergeList& merges, BpeOptions options, const std::string& sourceName);
    BpeModel(BpeModel&& other) noexcept;

    // Appends the ids of `word` (already in the vocabulary's alphabet) to `out`.
    void encodeWord(std::string_view word, std::vector<TokenId>& out) const;

    const Vocabulary& vocabulary() const { return vocab_; }
    // The token strings by id; ids the vocabulary skips hold an empty string.
    const std::vector<std::string>& tokens() const { return tokens_; }

private:
    struct Merge {
        std::int32_t rank;
        TokenId result;
    };
    static std::uint64_t pairKey(TokenId left, TokenId right) {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
    }
    void initialSymbols(std::string_view word, std::vector<TokenId>& symbols) const;
    void applyMerges(std::vector<TokenId>& symbols) const;

    Vocabulary vocab_;
    std::vector<std::string> tokens_;
    std::unordered_map<std::uint64_t, Merge> merges_;
    BpeOptions options_;
    std::optional<TokenId> unkId_;
    std::array<TokenId, 256> byteIds_{};  // id of "<0xNN>", or -1

    mutable std::mutex cacheMutex_;
    mutable std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>> cache_;
};

}  // namespace qs::model
