#pragma once
// Module-name patterns as the producers' configs write them.
#include <string_view>

namespace qs::formats::detail {

// Python `re.match(pattern, name)`: anchored at the start only (GPTQModel `dynamic` keys,
// compressed-tensors "re:" targets), with io::Regex's bounds. Throws ConfigError (quant_config.h)
// for a pattern that does not compile or a match that exceeds the bounds.
bool regexMatchesStart(std::string_view pattern, std::string_view name);
// Python `fnmatch.fnmatch` (ModelOpt exclude_modules, gpt-oss modules_to_not_convert): * ? [..].
bool wildcardMatches(std::string_view pattern, std::string_view name);

}  // namespace qs::formats::detail
