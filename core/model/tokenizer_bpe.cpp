#include "tokenizer_bpe.h"

#include <cstdio>
#include <queue>

#include "qs/error.h"

#include "tokenizer_utf8.h"

namespace qs::model {
namespace {

// Hugging Face caps its word cache likewise; past it, words are encoded without being remembered,
// so memory stays bounded on text with unbounded vocabulary (numbers, hashes).
constexpr std::size_t kCacheCapacity = 1 << 17;

}  // namespace

BpeModel::BpeModel(Vocabulary vocab, const MergeList& merges, BpeOptions options, const std::string& sourceName)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
    TokenId maxId = -1;
    for (const auto& [text, id] : vocab_) {
        if (id < 0) throw Error(sourceName + ": negative token id for '" + text + "'");
        maxId = std::max(maxId, id);
    }
    tokens_.resize(static_cast<std::size_t>(maxId + 1));
    for (const auto& [text, id] : vocab_) tokens_[static_cast<std::size_t>(id)] = text;

    merges_.reserve(merges.size());
    const auto lookup = [&](const std::string& token) {
        const auto it = vocab_.find(token);
        if (it == vocab_.end())
            throw Error(sourceName + ": merge refers to '" + token + "', which is not in the vocabulary");
        return it->second;
    };
    for (std::size_t rank = 0; rank < merges.size(); ++rank) {
        const auto& [left, right] = merges[rank];
        const Merge merge{static_cast<std::int32_t>(rank), lookup(left + right)};
        // A pair listed twice keeps its last rank, as in Hugging Face's and OpenAI's loaders.
        merges_.insert_or_assign(pairKey(lookup(left), lookup(right)), merge);
    }

    if (options_.unkToken) {
        const auto it = vocab_.find(*options_.unkToken);
        if (it == vocab_.end())
            throw Error(sourceName + ": unk_token '" + *options_.unkToken + "' is not in the vocabulary");
        unkId_ = it->second;
    }
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        const auto it = vocab_.find(std::string_view(name));
        byteIds_[b] = it == vocab_.end() ? -1 : it->second;
    }
}

BpeModel::BpeModel(BpeModel&& other) noexcept
    : vocab_(std::move(other.vocab_)),
      tokens_(std::move(other.tokens_)),
      merges_(std::move(other.merges_)),
      options_(std::move(other.options_)),
      unkId_(other.unkId_),
      byteIds_(other.byteIds_) {}

void BpeModel::initialSymbols(std::string_view word, std::vector<TokenId>& symbols) const {
    bool previousUnknown = false;
    std::size_t pos = 0;
    while (pos < word.size()) {
        const std::size_t len = std::min(utf8::charLength(static_cast<unsigned char>(word[pos])), word.size() - pos);
        const std::string_view ch = word.substr(pos, len);
        pos += len;
        if (const auto it = vocab_.find(ch); it != vocab_.end()) {
            symbols.push_back(it->second);
            previousUnknown = false;
            continue;
        }
        bool allBytes = options_.byteFallback;
        for (const char c : ch) allBytes = allBytes && byteIds_[static_cast<unsigned char>(c)] >= 0;
        if (allBytes) {
            for (const char c : ch) symbols.push_back(byteIds_[static_cast<unsigned char>(c)]);
            previousUnknown = false;
            continue;
        }
        // Without an unk token the character is dropped, as Hugging Face does.
        if (unkId_ && !(options_.fuseUnk && previousUnknown)) symbols.push_back(*unkId_);
        previousUnknown = unkId_.has_value();
    }
}

void BpeModel::applyMerges(std::vector<TokenId>& symbols) const {
    const int n = static_cast<int>(symbols.size());
    if (n < 2) return;
    // Doubly linked list over the symbols; a merged-away symbol gets id -1.
    std::vector<int> prev(n), next(n);
    for (int i = 0; i < n; ++i) {
        prev[i] = i - 1;
        next[i] = i + 1 < n ? i + 1 : -1;
    }
    struct Candidate {
        std::int32_t rank;
        int pos;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    const auto findMerge = [&](int left) -> const Merge* {
        const int right = next[left];
        if (right < 0) return nullptr;
        const auto it = merges_.find(pairKey(symbols[left], symbols[right]));
        return it == merges_.end() ? nullptr : &it->second;
    };
    const auto consider = [&](int left) {
        if (const Merge* m = findMerge(left)) queue.push({m->rank, left});
    };
    for (int i = 0; i + 1 < n; ++i) consider(i);

    while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        // Entries go stale when a neighbour merged first; the pair now at `pos` must still have this rank.
        if (symbols[c.pos] < 0) continue;
        const Merge* m = findMerge(c.pos);
        if (!m || m->rank != c.rank) continue;
        const int right = next[c.pos];
        symbols[c.pos] = m->result;
        symbols[right] = -1;
        next[c.pos] = next[right];
        if (next[right] >= 0) prev[next[right]] = c.pos;
        if (prev[c.pos] >= 0) consider(prev[c.pos]);
        consider(c.pos);
    }
    std::erase(symbols, -1);
}

void BpeModel::encodeWord(std::string_view word, std::vector<TokenId>& out) const {
    if (options_.ignoreMerges) {
        if (const auto it = vocab_.find(word); it != vocab_.end()) {
            out.push_back(it->second);
            return;
        }
    }
    {
        const std::lock_guard lock(cacheMutex_);
        if (const auto it = cache_.find(word); it != cache_.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<TokenId> symbols;
    symbols.reserve(word.size());
    initialSymbols(word, symbols);
    applyMerges(symbols);
    out.insert(out.end(), symbols.begin(), symbols.end());

    const std::lock_guard lock(cacheMutex_);
    if (cache_.size() < kCacheCapacity) cache_.try_emplace(std::string(word), std::move(symbols));
}

}  // namespace qs::model
