#include "tokenizer_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "qs/error.h"

namespace qs::model {

struct Regex::Compiled {
    pcre2_code* code = nullptr;
    ~Compiled() { pcre2_code_free(code); }
};

Regex::Regex(const std::string& pattern, Syntax syntax, const std::string& sourceName)
    : compiled_(std::make_unique<Compiled>())
{
    // PCRE2 refuses UCP together with LITERAL; a literal needs no character classes anyway.
    const uint32_t flags = PCRE2_UTF | (syntax == Syntax::Literal ? PCRE2_LITERAL : PCRE2_UCP);
    int errorCode = 0;
    PCRE2_SIZE errorOffset = 0;
    compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), flags,
                                    &errorCode, &errorOffset, nullptr);
    if (!compiled_->code) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(errorCode, message, sizeof message);
        throw Error(sourceName + ": pattern '" + pattern + "' does not compile at offset " + std::to_string(errorOffset) +
                    ": " + reinterpret_cast<const char*>(message));
    }
    // JIT makes splitting a megabyte of text several times faster; without it matching still works.
    pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

std::vector<Span> Regex::findAll(std::string_view text) const
{
    std::vector<Span> spans;
    // Match data is per call so that one Regex can serve several threads.
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
        pcre2_match_data_create_from_pattern(compiled_->code, nullptr), &pcre2_match_data_free);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    std::size_t offset = 0;
    while (offset <= text.size()) {
        const int rc = pcre2_match(compiled_->code, subject, text.size(), offset, PCRE2_NO_UTF_CHECK, data.get(),
                                   nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) throw Error("tokenizer: regex match failed with PCRE2 error " + std::to_string(rc));
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
        const Span span{ovector[0], ovector[1]};
        if (span.end == span.begin) {
            // An empty match yields no piece; step over one whole character to make progress.
            if (span.end >= text.size()) break;
            offset = span.end + 1;
            while (offset < text.size() && (static_cast<unsigned char>(text[offset]) & 0xC0) == 0x80) ++offset;
            continue;
        }
        spans.push_back(span);
        offset = span.end;
    }
    return spans;
}

}  // namespace qs::model
