#include "qs/io/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "qs/error.h"

namespace qs::io {

namespace {

std::string pcreMessage(int code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(code, message, sizeof message);
    return reinterpret_cast<const char*>(message);
}

// The start of a pattern, for messages: enough to recognise it, never the whole of a huge one.
std::string patternStart(std::string_view pattern) {
    constexpr std::size_t kShown = 80;
    return "'" + std::string(pattern.substr(0, kShown)) + (pattern.size() > kShown ? "...'" : "'");
}

template <typename T, void (*Free)(T*)>
struct Owned {
    T* p = nullptr;
    ~Owned() { Free(p); }
};

}  // namespace

struct Regex::Compiled {
    pcre2_code* code = nullptr;
    pcre2_match_context* limits = nullptr;
    std::string pattern;  // for messages
    ~Compiled() {
        pcre2_match_context_free(limits);
        pcre2_code_free(code);
    }
};

Regex::Regex(const std::string& pattern, Syntax syntax, const std::string& sourceName, bool jit)
    : compiled_(std::make_unique<Compiled>()), sourceName_(sourceName) {
    if (pattern.size() > kMaxRegexPatternBytes)
        throw Error(sourceName + ": pattern " + patternStart(pattern) + " is " + std::to_string(pattern.size()) +
                    " bytes long, more than the " + std::to_string(kMaxRegexPatternBytes) + " QuantScope compiles");
    Owned<pcre2_compile_context, pcre2_compile_context_free> context{pcre2_compile_context_create(nullptr)};
    if (context.p == nullptr) throw Error(sourceName + ": out of memory compiling a pattern");
    pcre2_set_parens_nest_limit(context.p, kMaxRegexNesting);
    pcre2_set_max_pattern_length(context.p, kMaxRegexPatternBytes);
    // PCRE2 refuses UCP together with LITERAL; a literal needs no character classes anyway.
    const uint32_t flags = PCRE2_UTF | (syntax == Syntax::Literal ? PCRE2_LITERAL : PCRE2_UCP);
    int errorCode = 0;
    PCRE2_SIZE errorOffset = 0;
    compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), flags, &errorCode,
                                    &errorOffset, context.p);
    if (!compiled_->code)
        throw Error(sourceName + ": pattern " + patternStart(pattern) + " does not compile at offset " +
                    std::to_string(errorOffset) + ": " + pcreMessage(errorCode));
    compiled_->limits = pcre2_match_context_create(nullptr);
    if (compiled_->limits == nullptr) throw Error(sourceName + ": out of memory compiling a pattern");
    pcre2_set_match_limit(compiled_->limits, kRegexMatchLimit);
    pcre2_set_depth_limit(compiled_->limits, kRegexDepthLimit);
    pcre2_set_heap_limit(compiled_->limits, kRegexHeapLimitKiB);
    compiled_->pattern = pattern;
    // JIT makes splitting a megabyte of text several times faster; without it matching still works.
    // JIT matching honours the match limit too.
    if (jit) pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

namespace {

// pcre2_match's result: > 0 matched, 0 ... PCRE2_ERROR_NOMATCH not matched, a limit or another error thrown.
int matchOnce(const pcre2_code* code, pcre2_match_context* limits, std::string_view subject, std::size_t offset,
              uint32_t options, pcre2_match_data* data, const std::string& sourceName, const std::string& pattern) {
    const int rc =
        pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), offset, options, data, limits);
    if (rc >= 0 || rc == PCRE2_ERROR_NOMATCH) return rc;
    const bool limit = rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT ||
                       rc == PCRE2_ERROR_JIT_STACKLIMIT;
    throw Error(sourceName + ": pattern " + patternStart(pattern) +
                (limit ? " backtracks past QuantScope's limits" : " failed") + " matching a text of " +
                std::to_string(subject.size()) + " bytes (PCRE2: " + pcreMessage(rc) + ")");
}

}  // namespace

std::vector<Span> Regex::findAll(std::string_view text) const {
    std::vector<Span> spans;
    // Match data is per call so that one Regex can serve several threads.
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
        pcre2_match_data_create_from_pattern(compiled_->code, nullptr), &pcre2_match_data_free);
    std::size_t offset = 0;
    while (offset <= text.size()) {
        const int rc = matchOnce(compiled_->code, compiled_->limits, text, offset, PCRE2_NO_UTF_CHECK, data.get(),
                                 sourceName_, compiled_->pattern);
        if (rc == PCRE2_ERROR_NOMATCH) break;
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

bool Regex::matchesAtStart(std::string_view subject) const {
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
        pcre2_match_data_create_from_pattern(compiled_->code, nullptr), &pcre2_match_data_free);
    // The subject is checked for valid UTF-8 here (a module name is not known to be).
    return matchOnce(compiled_->code, compiled_->limits, subject, 0, PCRE2_ANCHORED, data.get(), sourceName_,
                     compiled_->pattern) >= 0;
}

}  // namespace qs::io
