#pragma once
// The user's rules for a mixed-precision allocation, applied before it: `--override REGEX=METHOD`
// fixes the method of the linears whose name the regex finds (searched anywhere in
// "model.layers.N.module", the text tower's prefix in place of "model." for a VLM, as llama.cpp's --tensor-type), `--ignore REGEX` keeps them dense.
// The embeddings and lm_head are always dense (the Job quantizes decoder linears only), so a rule
// that names only them matches nothing and is refused like any other. The first matching override
// wins; ignore wins over override.
#include <string>
#include <string_view>
#include <vector>

#include "qs/pipeline/method_spec.h"

namespace qs::pipeline {

struct ModuleOverride {
    std::string pattern;
    MethodSpec method;
};

struct ModuleRules {
    std::vector<ModuleOverride> overrides;
    std::vector<std::string> ignore;
    // The decoder's tensor prefix the names are matched with: the model's arch.tensorPrefix, so that a
    // rule written with a VLM's real names (model.language_model.layers.N.) matches its linears.
    std::string tensorPrefix = "model.";

    bool empty() const { return overrides.empty() && ignore.empty(); }
};

// "REGEX=METHOD" (the last '=' splits, so a regex may hold one), METHOD as parseMixMethod reads it (q8_0:
// the ggml type); throws qs::Error naming the text.
ModuleOverride parseOverride(std::string_view text, int groupSize = 128);

// What the rules decide for one linear.
struct RuleDecision {
    enum class Kind { Free, Fixed, Dense } kind = Kind::Free;
    const MethodSpec* method = nullptr;  // Fixed: the override's method
};

// Compiles the rules once; throws qs::Error for a regex that does not compile.
class RuleMatcher {
public:
    explicit RuleMatcher(const ModuleRules& rules);
    ~RuleMatcher();
    RuleMatcher(RuleMatcher&&) noexcept;
    RuleDecision decide(const std::string& module);  // records which rules matched
    // One decision for the linears `modules` of `layer` (a fused group: mixed_methods.h); throws
    // qs::Error naming the module that the rules treat differently from the first.
    RuleDecision decideGroup(int layer, const std::vector<std::string>& modules);
    // Throws qs::Error naming the first rule that matched none of the names decided so far.
    void requireEveryRuleUsed() const;

private:
    struct Compiled;
    const ModuleRules& rules_;
    std::vector<Compiled> compiled_;
};

// The candidates followed by the overrides' methods not among them: what the measurement pass runs.
std::vector<MethodSpec> measuredMethods(const std::vector<MethodSpec>& candidates, const ModuleRules& rules);
std::vector<std::string> namesOf(const std::vector<MethodSpec>& methods);

// A uniform method with the rules applied (no budget): overrides fix, ignore keeps dense, per fused
// group. Throws qs::Error for a rule that matches nothing or covers part of a fused group.
struct MixedMethods;
MixedMethods applyRules(const MethodSpec& method, const ModuleRules& rules, int layers, const std::string& name);

}  // namespace qs::pipeline
