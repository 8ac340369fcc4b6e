#pragma once
// Module-name patterns as the producers' configs write them.
#include <string_view>

namespace qs::formats::detail {

// Python `re.match(pattern, name)`: anchored at the start only (GPTQModel `dynamic` keys,
// compressed-tensors "re:" targets). Throws qs::Error for a pattern std::regex cannot read.
bool regexMatchesStart(std::string_view pattern, std::string_view name);
// Python `fnmatch.fnmatch` (ModelOpt exclude_modules, gpt-oss modules_to_not_convert): * ? [..].
bool wildcardMatches(std::string_view pattern, std::string_view name);

}  // namespace qs::formats::detail
