#include "module_match.h"

#include <string>

#include "qs/error.h"
#include "qs/io/regex.h"

#include "quant_config.h"

namespace qs::formats::detail {

bool regexMatchesStart(std::string_view pattern, std::string_view name) {
    try {
        // Compiled per call: a config holds a handful of patterns and the bounds make each cheap.
        return io::Regex(std::string(pattern), io::Regex::Syntax::Pattern, "module pattern", false)
            .matchesAtStart(name);
    } catch (const Cancelled&) {
        throw;
    } catch (const Error& e) {
        throw ConfigError(e.what());  // LinearReader names the config file
    }
}

namespace {

// Matches the bracket expression starting at p[i] == '['; sets `next` past it. False when unterminated.
bool bracketMatches(std::string_view p, std::size_t i, char c, bool& matched, std::size_t& next) {
    std::size_t j = i + 1;
    const bool negate = j < p.size() && p[j] == '!';
    if (negate) ++j;
    bool any = false;
    for (bool first = true; j < p.size() && (first || p[j] != ']'); first = false, ++j) {
        if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
            any = any || (p[j] <= c && c <= p[j + 2]);
            j += 2;
        } else {
            any = any || p[j] == c;
        }
    }
    if (j >= p.size()) return false;
    matched = any != negate;
    next = j + 1;
    return true;
}

}  // namespace

bool wildcardMatches(std::string_view p, std::string_view s) {
    // Iterative glob with one backtrack point, the classic linear-time approach.
    std::size_t pi = 0, si = 0, starP = std::string_view::npos, starS = 0;
    while (si < s.size()) {
        bool advanced = false;
        if (pi < p.size()) {
            if (p[pi] == '*') {
                starP = pi++;
                starS = si;
                continue;
            }
            if (p[pi] == '?') {
                ++pi, ++si;
                advanced = true;
            } else if (p[pi] == '[') {
                bool matched = false;
                std::size_t next = 0;
                if (bracketMatches(p, pi, s[si], matched, next)) {
                    if (matched) pi = next, ++si, advanced = true;
                } else if (s[si] == '[') {
                    ++pi, ++si, advanced = true;  // an unterminated '[' is literal, as in fnmatch
                }
            } else if (p[pi] == s[si]) {
                ++pi, ++si;
                advanced = true;
            }
        }
        if (advanced) continue;
        if (starP == std::string_view::npos) return false;
        pi = starP + 1;
        si = ++starS;
    }
    while (pi < p.size() && p[pi] == '*') ++pi;
    return pi == p.size();
}

}  // namespace qs::formats::detail
