#pragma once
// A compiled PCRE2 pattern (UTF + Unicode properties, JIT when available) that lists where it
// matches. Hugging Face compiles the same patterns with Oniguruma; PCRE2 accepts their syntax
// (\p{L}, (?i:...), lookahead) and gives the same matches for the pre-tokenizer patterns in use.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace qs::model {

struct Span {
    std::size_t begin = 0;
    std::size_t end = 0;
};

class Regex {
public:
    enum class Syntax { Pattern, Literal };

    // Throws qs::Error naming `sourceName` when the pattern does not compile.
    Regex(const std::string& pattern, Syntax syntax, const std::string& sourceName);
    Regex(Regex&&) noexcept;
    Regex& operator=(Regex&&) noexcept;
    ~Regex();

    // Non-overlapping matches from left to right. `text` must be valid UTF-8.
    std::vector<Span> findAll(std::string_view text) const;

private:
    struct Compiled;
    std::unique_ptr<Compiled> compiled_;
};

}  // namespace qs::model
