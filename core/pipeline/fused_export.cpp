#include "fused_export.h"

#include <map>
#include <set>

#include "qs/error.h"
#include "qs/quant/concatenate_rows.h"

namespace qs::pipeline {

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
        const std::pair<std::string, std::vector<std::string>>* group = nullptr;
        std::string layer;
        for (const auto& g : groups)
            for (const std::string& part : g.second)
                if (prefix.size() > part.size() && prefix.ends_with(part) && prefix[prefix.size() - part.size() - 1] == '.') {
                    group = &g;
                    layer = prefix.substr(0, prefix.size() - part.size());
                }
        if (group == nullptr) {
            out.linears.emplace_back(prefix, q);
            continue;
        }
        const std::string fused = layer + group->first;
        if (!written.insert(fused).second) continue;
        std::vector<quant::QuantizedLinear> parts;
        for (const std::string& part : group->second) {
            const auto it = byPrefix.find(layer + part);
            if (it == byPrefix.end())
                throw Error("cannot export " + prefix + " quantized beside " + layer + part + " left dense: the checkpoint stores them as one tensor, " + fused);
            const auto rows = folding.rowDivisors.find(layer + part);
            parts.push_back(rows == folding.rowDivisors.end() ? *it->second : withRowsDivided(*it->second, rows->second));
        }
        std::vector<const quant::QuantizedLinear*> pointers;
        for (const auto& p : parts) pointers.push_back(&p);
        out.owned.push_back(std::make_unique<const quant::QuantizedLinear>(quant::concatenateRows(pointers, fused)));
        out.linears.emplace_back(fused, out.owned.back().get());
        for (const std::string& part : group->second) folding.rowDivisors.erase(layer + part);
    }
    return out;
}

}  // namespace qs::pipeline
