#include "qs/pipeline/mixed_precision_rules.h"

#include <algorithm>

#include "qs/error.h"
#include "qs/io/regex.h"
#include "qs/pipeline/mixed_methods.h"

namespace qs::pipeline {

struct RuleMatcher::Compiled {
    io::Regex regex;
    std::string what;  // "--override 'REGEX=METHOD'" for the refusal
    bool used = false;
};

ModuleOverride parseOverride(std::string_view text, int groupSize) {
    const auto eq = text.rfind('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
        throw Error("--override '" + std::string(text) + "': expected REGEX=METHOD, e.g. 'down_proj=gptq8'");
    return {std::string(text.substr(0, eq)), parseMixMethod(text.substr(eq + 1), groupSize)};
}

RuleMatcher::RuleMatcher(const ModuleRules& rules) : rules_(rules) {
    for (const auto& o : rules.ignore)
        compiled_.push_back(
            {io::Regex(o, io::Regex::Syntax::Pattern, "--ignore '" + o + "'", false), "--ignore '" + o + "'"});
    for (const auto& o : rules.overrides) {
        const std::string what = "--override '" + o.pattern + "=" + o.method.name + "'";
        compiled_.push_back({io::Regex(o.pattern, io::Regex::Syntax::Pattern, what, false), what});
    }
}

RuleMatcher::~RuleMatcher() = default;
RuleMatcher::RuleMatcher(RuleMatcher&&) noexcept = default;

RuleDecision RuleMatcher::decide(const std::string& module) {
    RuleDecision d;
    const std::size_t ignores = rules_.ignore.size();
    for (std::size_t i = 0; i < compiled_.size(); ++i) {
        if (compiled_[i].regex.findAll(module).empty()) continue;
        compiled_[i].used = true;  // every matching rule counts as used, even when an earlier one wins
        if (d.kind != RuleDecision::Kind::Free) continue;
        if (i < ignores)
            d.kind = RuleDecision::Kind::Dense;
        else
            d = {RuleDecision::Kind::Fixed, &rules_.overrides[i - ignores].method};
    }
    return d;
}

RuleDecision RuleMatcher::decideGroup(int layer, const std::vector<std::string>& modules) {
    std::vector<RuleDecision> each;
    for (const auto& module : modules) each.push_back(decide(moduleName(layer, module, rules_.tensorPrefix)));
    for (std::size_t i = 1; i < each.size(); ++i) {
        const bool same = each[i].kind == each[0].kind &&
                          (each[i].kind != RuleDecision::Kind::Fixed || each[i].method->name == each[0].method->name);
        if (!same)
            throw Error(moduleName(layer, modules[i], rules_.tensorPrefix) + " is ruled differently from " +
                        moduleName(layer, modules[0], rules_.tensorPrefix) +
                        ": vLLM runs them as one fused linear, so a rule must cover all of them alike");
    }
    return each.front();
}

MixedMethods applyRules(const MethodSpec& method, const ModuleRules& rules, int layers, const std::string& name) {
    RuleMatcher matcher(rules);
    MixedMethods mix;
    mix.name = name;
    mix.layers.resize(std::size_t(std::max(layers, 0)));
    for (int l = 0; l < layers; ++l)
        for (const auto& fused : kFusedGroups) {
            const std::vector<std::string> modules(fused.begin(), fused.end());
            const RuleDecision d = matcher.decideGroup(l, modules);
            if (d.kind == RuleDecision::Kind::Dense) continue;
            for (const auto& m : modules)
                mix.layers[std::size_t(l)].emplace(m, d.kind == RuleDecision::Kind::Fixed ? *d.method : method);
        }
    matcher.requireEveryRuleUsed();
    return mix;
}

void RuleMatcher::requireEveryRuleUsed() const {
    for (const auto& c : compiled_)
        if (!c.used)
            throw Error(c.what + " matches no quantized linear (" + rules_.tensorPrefix +
                        "layers.N.self_attn.q_proj, ..., mlp.down_proj)");
}

std::vector<MethodSpec> measuredMethods(const std::vector<MethodSpec>& candidates, const ModuleRules& rules) {
    std::vector<MethodSpec> out = candidates;
    for (const auto& o : rules.overrides) {
        bool known = false;
        for (const auto& m : out) known = known || m.name == o.method.name;
        if (!known) out.push_back(o.method);
    }
    return out;
}

std::vector<std::string> namesOf(const std::vector<MethodSpec>& methods) {
    std::vector<std::string> names;
    for (const auto& m : methods) names.push_back(m.name);
    return names;
}

}  // namespace qs::pipeline
