#include "experts/expert_path.h"

#include <algorithm>
#include <charconv>

namespace qs::gui {
namespace {

constexpr std::string_view kExperts = "experts";

// An expert index: plain decimal digits of a sane length ("-1", "+3" and "1e3" are names, not indices).
std::optional<int> expertIndex(std::string_view token) {
    if (token.empty() || token.size() > 7 ||
        !std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    int value = 0;
    std::from_chars(token.data(), token.data() + token.size(), value);
    return value;
}

}  // namespace

std::optional<ExpertPath> parseExpertPath(std::string_view module) {
    // The "experts" token, whole: "shared_experts" and "num_experts" do not count.
    std::size_t at = 0;
    while (true) {
        at = module.find(kExperts, at);
        if (at == std::string_view::npos) return std::nullopt;
        const std::size_t end = at + kExperts.size();
        const bool startsToken = at == 0 || module[at - 1] == '.';
        const bool endsToken = end == module.size() || module[end] == '.';
        if (startsToken && endsToken) break;
        at = end;
    }
    ExpertPath path;
    const std::size_t containerEnd = at + kExperts.size();
    path.container = std::string(module.substr(0, containerEnd));
    if (containerEnd == module.size()) return path;  // gpt-oss's "mlp.experts": every expert stacked
    const std::string_view after = module.substr(containerEnd + 1);
    const std::size_t dot = after.find('.');
    if (const auto index = expertIndex(after.substr(0, dot))) {
        path.expert = *index;
        path.rest = dot == std::string_view::npos ? std::string() : std::string(after.substr(dot + 1));
    } else {
        path.rest = std::string(after);  // gpt-oss's "mlp.experts.gate_up_proj" (its bias, blocks, scales)
    }
    return path;
}

}  // namespace qs::gui
