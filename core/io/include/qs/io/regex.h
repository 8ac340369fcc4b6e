#pragma once
// Regex: the one regular-expression engine for patterns that come from files (tokenizer.json's
// pre-tokenizer and normalizer patterns, GPTQModel `dynamic` keys, compressed-tensors "re:"
// targets). PCRE2 (UTF, Unicode properties, JIT when available), bounded everywhere a hostile file
// could make it run away:
//   - a pattern longer than kMaxRegexPatternBytes is refused before compiling;
//   - compiling refuses nesting deeper than kMaxRegexNesting groups (std::regex recursed on
//     50,000 nested groups until the stack overflowed);
//   - every match runs under a match limit, a depth limit and a heap limit, so catastrophic
//     backtracking ("(.|.)*X", "(.*)*X") ends in a qs::Error instead of a hang.
// Hugging Face compiles tokenizer patterns with Oniguruma and Python's re reads the config patterns;
// PCRE2 accepts their syntax (\p{L}, (?i:...), lookahead) and gives the same matches for the
// patterns in use.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace qs::io {

inline constexpr std::size_t kMaxRegexPatternBytes = 8192;
inline constexpr std::uint32_t kMaxRegexNesting = 64;
inline constexpr std::uint32_t kRegexMatchLimit = 1'000'000;  // backtracking steps per match attempt
inline constexpr std::uint32_t kRegexDepthLimit = 10'000;
inline constexpr std::uint32_t kRegexHeapLimitKiB = 64 * 1024;

struct Span {
    std::size_t begin = 0;
    std::size_t end = 0;
};

class Regex {
public:
    enum class Syntax { Pattern, Literal };

    // Throws qs::Error naming `sourceName` when the pattern is too long or does not compile; the
    // message quotes at most the start of the pattern. `jit`: worth it for patterns that split
    // megabytes of text, not for one matched against a few module names.
    Regex(const std::string& pattern, Syntax syntax, const std::string& sourceName, bool jit = true);
    Regex(Regex&&) noexcept;
    Regex& operator=(Regex&&) noexcept;
    ~Regex();

    // Non-overlapping matches from left to right. `text` must be valid UTF-8. Throws qs::Error when
    // a match exceeds the limits.
    std::vector<Span> findAll(std::string_view text) const;
    // Python's re.match: whether the pattern matches at the start of `subject` (not necessarily all
    // of it). Throws qs::Error when the match exceeds the limits.
    bool matchesAtStart(std::string_view subject) const;

private:
    struct Compiled;
    std::unique_ptr<Compiled> compiled_;
    std::string sourceName_;
};

}  // namespace qs::io
