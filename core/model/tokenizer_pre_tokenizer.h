#pragma once
// The "pre_tokenizer" of tokenizer.json: cuts normalized text into words that BPE then encodes one
// by one (and that the word cache keys on). Byte-level tokenizers split with a regex and map bytes
// to the GPT-2 alphabet; Metaspace tokenizers turn spaces into "▁".
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "qs/io/regex.h"

namespace qs::model {

using io::Regex;
using io::Span;

// GPT-2's split pattern, used by ByteLevel pre-tokenizers with use_regex = true.
inline constexpr const char* kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
enum class PrependScheme { Always, First, Never };

class PreTokenizer {
public:
    PreTokenizer() = default;  // the whole text is one word
    // `spec` is the "pre_tokenizer" value (possibly null); throws qs::Error for kinds not supported.
    static PreTokenizer fromJson(const nlohmann::json& spec, const std::string& sourceName);

    void addSplit(Regex regex, SplitBehavior behavior, bool invert);
    void addByteLevel(bool addPrefixSpace, bool useRegex, const std::string& sourceName);

    // `atInputStart`: the text begins the whole input (Metaspace's "first" prepend scheme).
    std::vector<std::string> split(std::string_view text, bool atInputStart) const;

private:
    enum class Kind { Split, ByteLevel, Metaspace };
    struct Step {
        Kind kind = Kind::Split;
        std::optional<Regex> regex;                        // Split; ByteLevel with use_regex
        SplitBehavior behavior = SplitBehavior::Isolated;  // Split
        bool invert = false;                               // Split
        bool addPrefixSpace = false;                       // ByteLevel
        std::string replacement;                           // Metaspace
        PrependScheme prependScheme = PrependScheme::Always;
        bool splitOnReplacement = true;  // Metaspace
    };
    void addJson(const nlohmann::json& spec, const std::string& sourceName);
    static void applySplit(const Step& step, std::vector<std::string>& words);
    static void applyByteLevel(const Step& step, std::vector<std::string>& words);
    static void applyMetaspace(const Step& step, std::vector<std::string>& words, bool atInputStart);

    std::vector<Step> steps_;
};

}  // namespace qs::model
