#include "fused_modules.h"

#include <array>
#include <map>

#include "qs/architectures/module_names.h"
#include "qs/error.h"

namespace qs::formats::detail {

namespace modules = architectures::modules;
namespace {

struct Fused {
    std::string_view shard;
    std::string_view fused;
};

constexpr std::array<Fused, 5> kFused = {{{modules::kQProj, modules::kQkvProj},
                                          {modules::kKProj, modules::kQkvProj},
                                          {modules::kVProj, modules::kQkvProj},
                                          {modules::kGateProj, modules::kGateUpProj},
                                          {modules::kUpProj, modules::kGateUpProj}}};

}  // namespace

std::string fusedPrefix(std::string_view prefix) {
    for (const auto& f : kFused)
        if (prefix.size() > f.shard.size() && prefix.ends_with(f.shard) &&
            prefix[prefix.size() - f.shard.size() - 1] == '.')
            return std::string(prefix.substr(0, prefix.size() - f.shard.size())) + std::string(f.fused);
    return "";
}

void requireFusedShardsAlike(const ExportScheme& scheme,
                             const std::function<std::string(const quant::QuantizedLinear&)>& schemeKey,
                             std::string_view format) {
    std::map<std::string, std::pair<std::string, std::string>> seen;  // fused prefix -> (first shard, its key)
    const std::string dense = "dense";
    auto check = [&](const std::string& prefix, const std::string& key) {
        const std::string fused = fusedPrefix(prefix);
        if (fused.empty()) return;
        const auto [it, first] = seen.emplace(fused, std::make_pair(prefix, key));
        if (!first && it->second.second != key)
            throw Error(std::string(format) + " cannot hold " + prefix + " (" + key + ") beside " + it->second.first +
                        " (" + it->second.second + "): vLLM loads them as one linear, " + fused + ", with one scheme");
    };
    for (const auto& [prefix, q] : scheme.linears) check(prefix, schemeKey(*q));
    for (const auto& prefix : scheme.denseLinears) check(prefix, dense);
}

std::string regexEscape(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (std::string_view("\\.^$|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
    return out;
}

}  // namespace qs::formats::detail
