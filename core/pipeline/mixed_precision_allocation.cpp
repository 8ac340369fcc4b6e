#include "qs/pipeline/mixed_precision_allocation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "qs/error.h"

namespace qs::pipeline {
namespace {

constexpr std::int64_t kMaxStates = 20'000'000;  // DP states per allocation: a frontier of 48 stays well under a second

int candidateIndex(const SensitivityTable& t, const std::string& name, const std::string& what) {
    for (std::size_t c = 0; c < t.candidates.size(); ++c)
        if (t.candidates[c].name == name) return static_cast<int>(c);
    throw Error(what + " '" + name + "' was not measured (the candidates are the methods the measurement pass ran)");
}

quant::AllocationOption optionOf(const SensitivityTable& t, const std::vector<std::size_t>& groups, int c) {
    double bits = 0, params = 0, damage = 0;
    for (std::size_t g : groups) {
        const auto& group = t.groups[g];
        bits += group.bitsPerWeight[std::size_t(c)] * double(group.params);
        params += double(group.params);
        damage += group.damage[std::size_t(c)];
    }
    return {bits / params, damage / params, t.candidates[std::size_t(c)].name};  // error per weight: Σ p·e = Σ damage
}

}  // namespace

MixedPrecisionPlanner::MixedPrecisionPlanner(const SensitivityTable& table, const ModuleRules& rules,
                                             const std::vector<std::string>& allowed)
    : table_(table), groupCount_(table.groups.size()) {
    for (const auto& name : allowed) allowed_.push_back(candidateIndex(table, name, "candidate"));
    if (allowed_.empty()) throw Error("no candidate methods to allocate");
    RuleMatcher matcher(rules);
    std::map<int, std::vector<std::size_t>> freeByLayer;
    for (std::size_t g = 0; g < table.groups.size(); ++g) {
        const RuleDecision d = matcher.decideGroup(table.groups[g].layer, table.groups[g].modules);
        if (d.kind == RuleDecision::Kind::Dense) continue;
        if (d.kind == RuleDecision::Kind::Fixed) {
            unitGroups_.push_back({g});
            unitCandidates_.push_back({candidateIndex(table, d.method->name, "--override method")});
        } else if (table.measure == Sensitivity::LayerKl) {
            freeByLayer[table.groups[g].layer].push_back(g);
        } else {
            unitGroups_.push_back({g});
            unitCandidates_.push_back(allowed_);
        }
    }
    matcher.requireEveryRuleUsed();
    for (auto& [layer, groups] : freeByLayer) {
        unitGroups_.push_back(std::move(groups));
        unitCandidates_.push_back(allowed_);
    }
    if (unitGroups_.empty()) throw Error("the rules keep every linear dense: there is nothing to allocate");
    std::vector<int> cheapestChoice, richestChoice;
    for (std::size_t u = 0; u < unitGroups_.size(); ++u) {
        quant::AllocationLayer unit;
        unit.name = moduleName(table.groups[unitGroups_[u].front()].layer,
                               table.groups[unitGroups_[u].front()].modules.front());
        for (std::size_t g : unitGroups_[u]) unit.params += table.groups[g].params;
        for (int c : unitCandidates_[u]) unit.options.push_back(optionOf(table, unitGroups_[u], c));
        units_.push_back(std::move(unit));
        const auto& opts = units_.back().options;
        const auto byBits = [](const quant::AllocationOption& a, const quant::AllocationOption& b) {
            return a.bitsPerWeight < b.bitsPerWeight;
        };
        cheapestChoice.push_back(int(std::min_element(opts.begin(), opts.end(), byBits) - opts.begin()));
        richestChoice.push_back(int(std::max_element(opts.begin(), opts.end(), byBits) - opts.begin()));
    }
    cheapest_ = quant::evaluateAllocation(units_, cheapestChoice).averageBpw;
    richest_ = quant::evaluateAllocation(units_, richestChoice).averageBpw;
}

MixedAllocation MixedPrecisionPlanner::fromChoice(double target, const quant::Allocation& a) const {
    MixedAllocation m;
    m.targetBpw = target;
    m.bitsPerWeight = a.averageBpw;
    m.choice.assign(groupCount_, -1);
    double damage = 0;
    for (std::size_t u = 0; u < units_.size(); ++u) {
        const int c = unitCandidates_[u][std::size_t(a.choice[u])];
        for (std::size_t g : unitGroups_[u]) {
            m.choice[g] = c;
            damage += table_.groups[g].damage[std::size_t(c)];
        }
    }
    m.predictedKl = table_.klPerDamage * damage;
    return m;
}

MixedAllocation MixedPrecisionPlanner::at(double targetBpw) const {
    // The cheapest allocation's bpw is a sum of products: allow it its own rounding.
    if (!(targetBpw >= cheapest_ - 1e-9 * std::max(1.0, cheapest_))) {
        char text[160];
        std::snprintf(text, sizeof text,
                      "--target-bpw %.4g is below the cheapest allocation (%.4f bits per weight, every linear at its "
                      "cheapest candidate)",
                      targetBpw, cheapest_);
        throw Error(text);
    }
    return fromChoice(targetBpw, quant::allocateExact(units_, std::max(targetBpw, cheapest_), kMaxStates));
}

std::vector<MixedAllocation> MixedPrecisionPlanner::frontier(int points) const {
    std::vector<double> budgets;
    for (int i = 0; i < points; ++i)
        budgets.push_back(cheapest_ + (richest_ - cheapest_) * double(i) / double(std::max(points - 1, 1)));
    for (int c : allowed_)
        if (table_.uniformBpw[std::size_t(c)] >= cheapest_ && table_.uniformBpw[std::size_t(c)] <= richest_)
            budgets.push_back(table_.uniformBpw[std::size_t(c)]);
    std::sort(budgets.begin(), budgets.end());
    std::vector<MixedAllocation> out;
    for (double b : budgets) {
        MixedAllocation a = at(b);
        if (!out.empty() && out.back().choice == a.choice) continue;
        out.push_back(std::move(a));
    }
    return out;
}

MixedMethods MixedPrecisionPlanner::methods(const MixedAllocation& allocation, const std::string& name) const {
    MixedMethods mix;
    mix.name = name;
    for (std::size_t g = 0; g < table_.groups.size(); ++g) {
        const auto& group = table_.groups[g];
        if (mix.layers.size() <= std::size_t(group.layer)) mix.layers.resize(std::size_t(group.layer) + 1);
        if (allocation.choice[g] < 0) continue;
        for (const auto& module : group.modules)
            mix.layers[std::size_t(group.layer)].emplace(module, table_.candidates[std::size_t(allocation.choice[g])]);
    }
    return mix;
}

}  // namespace qs::pipeline
