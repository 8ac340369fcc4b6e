#include "tokenizer_added_tokens.h"

#include <algorithm>

namespace qs::model {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Letters, digits, '_' and any non-ASCII byte (most of which belong to letters) count as word characters.
bool isWordByte(char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x80 || (u >= '0' && u <= '9') || (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || u == '_';
}

}  // namespace

void AddedTokens::add(AddedToken token) {
    if (token.content.empty()) return;
    // A later entry for the same content replaces the earlier one.
    const auto same =
        std::find_if(tokens_.begin(), tokens_.end(), [&](const AddedToken& t) { return t.content == token.content; });
    if (same != tokens_.end()) {
        indexById_.erase(same->id);
        indexById_[token.id] = static_cast<std::size_t>(same - tokens_.begin());
        *same = std::move(token);
        return;
    }
    auto& bucket = byFirstByte_[static_cast<unsigned char>(token.content[0])];
    indexById_[token.id] = tokens_.size();
    tokens_.push_back(std::move(token));
    bucket.push_back(tokens_.size() - 1);
    std::stable_sort(bucket.begin(), bucket.end(), [&](std::size_t a, std::size_t b) {
        return tokens_[a].content.size() > tokens_[b].content.size();
    });
}

std::optional<AddedTokens::Match> AddedTokens::findAt(std::string_view text, std::size_t pos, bool normalizedPass,
                                                      bool parseSpecial) const {
    for (const std::size_t index : byFirstByte_[static_cast<unsigned char>(text[pos])]) {
        const AddedToken& t = tokens_[index];
        if (t.normalized != normalizedPass || (t.special && !parseSpecial)) continue;
        if (text.compare(pos, t.content.size(), t.content) != 0) continue;
        const std::size_t end = pos + t.content.size();
        if (t.singleWord && ((pos > 0 && isWordByte(text[pos - 1])) || (end < text.size() && isWordByte(text[end]))))
            continue;
        return Match{pos, end, t.id};
    }
    return std::nullopt;
}

std::vector<TextSegment> AddedTokens::split(std::string_view text, bool normalizedPass, bool parseSpecial) const {
    std::vector<TextSegment> segments;
    std::size_t plainStart = 0;
    const auto flushPlain = [&](std::size_t end) {
        if (end > plainStart) segments.push_back({text.substr(plainStart, end - plainStart), std::nullopt, plainStart});
    };
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::optional<Match> match;
        if (!byFirstByte_[static_cast<unsigned char>(text[pos])].empty())
            match = findAt(text, pos, normalizedPass, parseSpecial);
        if (!match) {
            ++pos;
            continue;
        }
        const AddedToken& t = *byId(match->id);
        std::size_t begin = match->begin;
        std::size_t end = match->end;
        if (t.lstrip)
            while (begin > plainStart && isSpace(text[begin - 1])) --begin;
        if (t.rstrip)
            while (end < text.size() && isSpace(text[end])) ++end;
        flushPlain(begin);
        segments.push_back({{}, match->id, begin});
        plainStart = pos = end;
    }
    flushPlain(text.size());
    return segments;
}

const AddedToken* AddedTokens::byId(TokenId id) const {
    const auto it = indexById_.find(id);
    return it == indexById_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedTokens::byContent(std::string_view content) const {
    const auto it =
        std::find_if(tokens_.begin(), tokens_.end(), [&](const AddedToken& t) { return t.content == content; });
    return it == tokens_.end() ? nullptr : &*it;
}

TokenId AddedTokens::maxId() const {
    TokenId maxId = -1;
    for (const AddedToken& t : tokens_) maxId = std::max(maxId, t.id);
    return maxId;
}

}  // namespace qs::model
