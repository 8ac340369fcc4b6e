#pragma once
// What every fuzz target shares: a check that traps (libFuzzer reports it with the input), the
// property every refusal must have (a qs::Error whose text is one sanitised line), and the split of
// one fuzz input into the sections of a structured input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "qs/error.h"
#include "qs/message_text.h"

namespace qs::fuzz {

inline void check(bool ok) {
    if (!ok) __builtin_trap();
}

// A refusal is the expected outcome for most inputs; its message must still be one line of valid
// UTF-8 within the length limit, or a file could forge output lines through it.
inline void checkRefusal(const Error& e) {
    const std::string_view what = e.what();
    check(!what.empty() && what.size() <= kMaxMessageBytes);
    check(sanitizeMessage(what) == what);
}

// Sections separated by kSectionMarker (in the fuzz dictionaries, so mutations keep it whole).
inline constexpr std::string_view kSectionMarker = "\n--8<--\n";

inline std::vector<std::string_view> sections(const std::uint8_t* data, std::size_t size) {
    std::string_view rest(reinterpret_cast<const char*>(data), size);
    std::vector<std::string_view> out;
    while (true) {
        const auto at = rest.find(kSectionMarker);
        out.push_back(rest.substr(0, at));
        if (at == std::string_view::npos) return out;
        rest.remove_prefix(at + kSectionMarker.size());
    }
}

}  // namespace qs::fuzz
