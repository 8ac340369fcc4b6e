#include "fused_export.h"

#include <map>
#include <set>

#include "qs/error.h"
#include "qs/quant/concatenate_rows.h"

namespace qs::pipeline {
namespace {

using Group = std::pair<std::string, std::vector<std::string>>;  // fused module, its parts' modules

// The layer prefix of `prefix` when it ends in ".<module>" ("model.layers.3." for
// "model.layers.3.self_attn.q_proj" and "self_attn.q_proj"); empty when it does not.
std::string layerOf(const std::string& prefix, const std::string& module) {
    if (prefix.size() <= module.size() || !prefix.ends_with(module) || prefix[prefix.size() - module.size() - 1] != '.')
        return {};
    return prefix.substr(0, prefix.size() - module.size());
}

// The fused projection written for `layer` + `group`: its parts (read by `part`, AWQ's row divisors
// applied) stacked along the rows.
quant::QuantizedLinear fuseParts(const std::string& layer, const Group& group,
                                 const std::function<const quant::QuantizedLinear&(const std::string&)>& part,
                                 const std::map<std::string, std::vector<float>>& rowDivisors) {
    std::vector<quant::QuantizedLinear> parts;
    for (const std::string& module : group.second) {
        const std::string name = layer + module;
        const auto rows = rowDivisors.find(name);
        parts.push_back(rows == rowDivisors.end() ? part(name) : withRowsDivided(part(name), rows->second));
    }
    std::vector<const quant::QuantizedLinear*> pointers;
    for (const auto& p : parts) pointers.push_back(&p);
    return quant::concatenateRows(pointers, layer + group.first);
}

}  // namespace

FusedLinears fuseForExport(const std::vector<std::pair<std::string, const quant::QuantizedLinear*>>& linears,
                           const model::Architecture& arch, AwqFolding& folding) {
    FusedLinears out;
    const auto groups = model::fusedModules(arch);
    if (groups.empty()) {
        out.linears = linears;
        return out;
    }
    std::map<std::string, const quant::QuantizedLinear*> byPrefix(linears.begin(), linears.end());
    std::set<std::string> written;
    for (const auto& [prefix, q] : linears) {
        // "<layer prefix><part>": find the fused projection this part belongs to.
        const Group* group = nullptr;
        std::string layer;
        for (const auto& g : groups)
            for (const std::string& part : g.second)
                if (const std::string l = layerOf(prefix, part); !l.empty()) {
                    group = &g;
                    layer = l;
                }
        if (group == nullptr) {
            out.linears.emplace_back(prefix, q);
            continue;
        }
        const std::string fused = layer + group->first;
        if (!written.insert(fused).second) continue;
        const auto part = [&](const std::string& name) -> const quant::QuantizedLinear& {
            const auto it = byPrefix.find(name);
            if (it == byPrefix.end())
                throw Error("cannot export " + prefix + " quantized beside " + name +
                            " left dense: the checkpoint stores them as one tensor, " + fused);
            return *it->second;
        };
        out.owned.push_back(
            std::make_unique<const quant::QuantizedLinear>(fuseParts(layer, *group, part, folding.rowDivisors)));
        out.linears.emplace_back(fused, out.owned.back().get());
        for (const std::string& module : group->second) folding.rowDivisors.erase(layer + module);
    }
    return out;
}

FusedLinearReader::FusedLinearReader(const model::Architecture& arch,
                                     std::map<std::string, std::vector<float>> rowDivisors, PartReader part)
    : groups_(model::fusedModules(arch)), rowDivisors_(std::move(rowDivisors)), part_(std::move(part)) {}

std::shared_ptr<const quant::QuantizedLinear> FusedLinearReader::complete(const std::string& prefix) const {
    for (const Group& group : groups_) {
        const std::string layer = layerOf(prefix, group.first);
        if (layer.empty()) continue;
        std::vector<std::shared_ptr<const quant::QuantizedLinear>> held;  // alive while they are stacked
        const auto part = [&](const std::string& name) -> const quant::QuantizedLinear& {
            return *held.emplace_back(part_(name));
        };
        return std::make_shared<const quant::QuantizedLinear>(fuseParts(layer, group, part, rowDivisors_));
    }
    return part_(prefix);
}

}  // namespace qs::pipeline
