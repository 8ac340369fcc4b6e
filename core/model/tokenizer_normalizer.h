#pragma once
// The "normalizer" of tokenizer.json: text rewrites applied to each stretch of input between added
// tokens before it is split into words (Unicode NFC for Qwen; Prepend "▁" + Replace " " -> "▁"
// for Llama-2 files converted from SentencePiece).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "qs/io/regex.h"

namespace qs::model {

using io::Regex;
using io::Span;

class Normalizer {
public:
    Normalizer() = default;  // the identity
    // `spec` is the "normalizer" value (possibly null); throws qs::Error for kinds not supported.
    static Normalizer fromJson(const nlohmann::json& spec, const std::string& sourceName);

    void addPrepend(std::string text);
    void addReplace(const std::string& literal, std::string content, const std::string& sourceName);

    bool isIdentity() const { return steps_.empty(); }
    std::string apply(std::string_view text) const;

private:
    enum class Kind { Nfc, Nfd, Nfkc, Nfkd, Prepend, Replace };
    struct Step {
        Kind kind;
        std::string text;            // Prepend: the prefix; Replace: the replacement
        std::optional<Regex> regex;  // Replace: what to replace
    };
    void addJson(const nlohmann::json& spec, const std::string& sourceName);

    std::vector<Step> steps_;
};

// Replaces every match of `regex` in `text` with `content`.
std::string replaceAll(std::string_view text, const Regex& regex, std::string_view content);

}  // namespace qs::model
