#pragma once
// Added tokens ("<|im_start|>", "<s>", "<think>") are found in the text before anything else
// happens to it and become one id each; the stretches between them go through normalizer,
// pre-tokenizer and BPE. Matching is leftmost-longest, as in Hugging Face.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "qs/model/tokenizer.h"

namespace qs::model {

struct AddedToken {
    std::string content;
    TokenId id = 0;
    bool special = false;
    bool lstrip = false;      // the token swallows whitespace on its left
    bool rstrip = false;      // ... and on its right
    bool singleWord = false;  // matches only when not inside a word
    bool normalized = false;  // matched against normalized text instead of the raw input
};

struct TextSegment {
    std::string_view text;  // empty when this segment is a token
    std::optional<TokenId> token;
    std::size_t offset = 0;  // where the segment starts in the text that was split
};

class AddedTokens {
public:
    void add(AddedToken token);

    // Cuts `text` into plain stretches and added tokens. Only tokens whose `normalized` flag equals
    // `normalizedPass` take part; special ones only when `parseSpecial`. Empty stretches are left out.
    std::vector<TextSegment> split(std::string_view text, bool normalizedPass, bool parseSpecial) const;

    const AddedToken* byId(TokenId id) const;
    const AddedToken* byContent(std::string_view content) const;
    TokenId maxId() const;  // -1 when there are none

private:
    struct Match {
        std::size_t begin, end;  // including stripped whitespace
        TokenId id;
    };
    std::optional<Match> findAt(std::string_view text, std::size_t pos, bool normalizedPass, bool parseSpecial) const;

    std::vector<AddedToken> tokens_;
    std::unordered_map<TokenId, std::size_t> indexById_;
    std::array<std::vector<std::size_t>, 256> byFirstByte_;  // indices into tokens_, longest first
};

}  // namespace qs::model
