#include "qs/pipeline/mixed_precision_rules.h"

#include "qs/error.h"
#include "qs/io/regex.h"

namespace qs::pipeline {

struct RuleMatcher::Compiled {
    io::Regex regex;
    std::string what;   // "--override 'REGEX=METHOD'" for the refusal
    bool used = false;
};

ModuleOverride parseOverride(std::string_view text, int groupSize) {
    const auto eq = text.rfind('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
        throw Error("--override '" + std::string(text) + "': expected REGEX=METHOD, e.g. 'down_proj=gptq8'");
    return {std::string(text.substr(0, eq)), parseMethod(text.substr(eq + 1), groupSize)};
}

RuleMatcher::RuleMatcher(const ModuleRules& rules) : rules_(rules) {
    for (const auto& o : rules.ignore)
        compiled_.push_back({io::Regex(o, io::Regex::Syntax::Pattern, "--ignore '" + o + "'", false), "--ignore '" + o + "'"});
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
        compiled_[i].used = true;   // every matching rule counts as used, even when an earlier one wins
        if (d.kind != RuleDecision::Kind::Free) continue;
        if (i < ignores) d.kind = RuleDecision::Kind::Dense;
        else d = {RuleDecision::Kind::Fixed, &rules_.overrides[i - ignores].method};
    }
    return d;
}

void RuleMatcher::requireEveryRuleUsed() const {
    for (const auto& c : compiled_)
        if (!c.used) throw Error(c.what + " matches no quantized linear (model.layers.N.self_attn.q_proj, ..., mlp.down_proj)");
}

}  // namespace qs::pipeline
