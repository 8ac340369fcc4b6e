#pragma once
// sanitizeMessage: the one filter every message passes before it reaches a user (qs::Error builds
// its text through it; the CLI and the GUI apply it to any other exception). Messages quote what
// files hold (tensor names, dtype strings, regexes, JSON values), so a file must not be able to
// split a message into lines, print a forged "quantscope-cli: error:" line, move the cursor, or
// make the JSON report invalid UTF-8. The result is one line of valid UTF-8, at most maxBytes long:
//   - ASCII control characters become \n, \r, \t or \xNN; DEL becomes \x7f;
//   - C1 controls and the Unicode line and paragraph separators become \uNNNN;
//   - bytes that are not valid UTF-8 become \xNN;
//   - a longer text keeps its head (which names the file) and its tail (which says what is wrong)
//     around an ellipsis.
// Backslashes are kept as they are, so that the filter is idempotent: a message built from
// another's what() is not escaped twice.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qs {

inline constexpr std::size_t kMaxMessageBytes = 500;

namespace message_detail {

inline void appendHex(std::string& out, const char* prefix, std::uint32_t value, int digits) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += prefix;
    for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += kHex[(value >> shift) & 0xFu];
}

// The length of the valid UTF-8 sequence at text[i] (1..4), or 0 when the byte there starts none
// (overlong forms, surrogates and code points past U+10FFFF are invalid, as in RFC 3629).
inline std::size_t utf8Length(std::string_view text, std::size_t i, std::uint32_t& codePoint) {
    const auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(text[k]); };
    const std::uint8_t b0 = byte(i);
    std::size_t n = 0;
    std::uint32_t min = 0;
    if (b0 < 0x80) {
        codePoint = b0;
        return 1;
    }
    if ((b0 & 0xE0) == 0xC0)
        n = 2, min = 0x80, codePoint = b0 & 0x1Fu;
    else if ((b0 & 0xF0) == 0xE0)
        n = 3, min = 0x800, codePoint = b0 & 0x0Fu;
    else if ((b0 & 0xF8) == 0xF0)
        n = 4, min = 0x10000, codePoint = b0 & 0x07u;
    else
        return 0;
    if (i + n > text.size()) return 0;
    for (std::size_t k = 1; k < n; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        codePoint = (codePoint << 6) | (byte(i + k) & 0x3Fu);
    }
    if (codePoint < min || codePoint > 0x10FFFF || (codePoint >= 0xD800 && codePoint <= 0xDFFF)) return 0;
    return n;
}

// Index of the first byte at or after (forward) / at or before (!forward) `i` that starts a character.
inline std::size_t characterBoundary(std::string_view text, std::size_t i, bool forward) {
    const auto continuation = [&](std::size_t k) { return (static_cast<std::uint8_t>(text[k]) & 0xC0) == 0x80; };
    if (forward)
        while (i < text.size() && continuation(i)) ++i;
    else
        while (i > 0 && i < text.size() && continuation(i)) --i;
    return i;
}

}  // namespace message_detail

// Whether `text` is valid UTF-8 (RFC 3629), which JSON output and Hugging Face files require.
inline bool isValidUtf8(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        std::uint32_t cp = 0;
        const std::size_t n = message_detail::utf8Length(text, i, cp);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

// maxBytes must leave room for the ellipsis (at least 16).
inline std::string sanitizeMessage(std::string_view text, std::size_t maxBytes = kMaxMessageBytes) {
    using namespace message_detail;
    std::string out;
    out.reserve(text.size() < 4 * maxBytes ? text.size() : 4 * maxBytes);
    for (std::size_t i = 0; i < text.size();) {
        std::uint32_t cp = 0;
        const std::size_t n = utf8Length(text, i, cp);
        if (n == 0) {
            appendHex(out, "\\x", static_cast<std::uint8_t>(text[i]), 2);
            ++i;
            continue;
        }
        if (cp == '\n')
            out += "\\n";
        else if (cp == '\r')
            out += "\\r";
        else if (cp == '\t')
            out += "\\t";
        else if (cp < 0x20 || cp == 0x7F)
            appendHex(out, "\\x", cp, 2);
        else if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029)
            appendHex(out, "\\u", cp, 4);
        else
            out.append(text.substr(i, n));
        i += n;
        // Far past the limit only the tail still matters: skip to the last 2 * maxBytes input bytes.
        if (out.size() > 2 * maxBytes && text.size() - i > 2 * maxBytes)
            i = characterBoundary(text, text.size() - 2 * maxBytes, true);
    }
    if (out.size() <= maxBytes) return out;
    static constexpr std::string_view kEllipsis = " \xE2\x80\xA6 ";  // " … "
    const std::size_t headBytes = (maxBytes - kEllipsis.size()) * 2 / 3;
    const std::size_t tailBytes = maxBytes - kEllipsis.size() - headBytes;
    const std::size_t headEnd = characterBoundary(out, headBytes, false);
    const std::size_t tailBegin = characterBoundary(out, out.size() - tailBytes, true);
    return out.substr(0, headEnd) + std::string(kEllipsis) + out.substr(tailBegin);
}

}  // namespace qs
