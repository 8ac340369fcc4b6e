// Mixed precision under a bits-per-weight budget: the rules, the planner against a brute-force
// search over every choice, the Job's per-linear stream against the uniform one it must equal, and
// the proof on the bundled demo model (the allocation beats the uniform method at its own bpw).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "qs/analysis/rank_correlation.h"
#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/mixed_precision_allocation.h"
#include "qs/pipeline/mixed_precision_measure.h"
#include "qs/pipeline/mixed_precision_report.h"
#include "qs/pipeline/mixed_precision_rules.h"

#include "synthetic_checkpoint.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

// A table of `layers` layers × the four fused groups, three candidates at 3, 4 and 8 bits whose
// damage falls with the bits and differs between groups: down_proj is ten times as fragile, later layers more.
SensitivityTable syntheticTable(int layers, Sensitivity measure = Sensitivity::OutputError) {
    SensitivityTable t;
    t.measure = measure;
    t.candidates = parseMethodList("rtn3,rtn4,rtn8");
    const std::vector<std::int64_t> params = {3 * 64 * 64, 64 * 64, 2 * 64 * 128, 128 * 64};
    for (int l = 0; l < layers; ++l)
        for (std::size_t g = 0; g < kFusedGroups.size(); ++g) {
            SensitivityGroup s;
            s.layer = l;
            for (auto m : kFusedGroups[g]) s.modules.emplace_back(m);
            s.params = params[g];
            s.bitsPerWeight = {3.5, 4.5, 8.5};
            const double fragile = (1.0 + l) * (g == 3 ? 10.0 : 1.0) + double(g) * 0.3;
            s.damage = {fragile * 0.04, fragile * 0.01, fragile * 0.0001};
            t.groups.push_back(std::move(s));
        }
    for (std::size_t c = 0; c < 3; ++c) {
        t.uniformBpw.push_back(t.groups.front().bitsPerWeight[c]);
        t.uniformKl.push_back(std::numeric_limits<double>::quiet_NaN());
    }
    return t;
}

// The smallest Σ damage over every assignment of the allowed candidates to the groups within the budget.
double bruteForceBest(const SensitivityTable& t, const std::vector<int>& allowed, double budget) {
    const std::size_t n = t.groups.size();
    std::vector<std::size_t> idx(n, 0);
    double best = std::numeric_limits<double>::infinity();
    while (true) {
        double bits = 0, params = 0, damage = 0;
        for (std::size_t g = 0; g < n; ++g) {
            const int c = allowed[idx[g]];
            bits += t.groups[g].bitsPerWeight[std::size_t(c)] * double(t.groups[g].params);
            params += double(t.groups[g].params);
            damage += t.groups[g].damage[std::size_t(c)];
        }
        if (bits / params <= budget + 1e-12) best = std::min(best, damage);
        std::size_t k = 0;
        while (k < n && ++idx[k] == allowed.size()) idx[k++] = 0;
        if (k == n) break;
    }
    return best;
}

std::string refusal(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(MixedRules, OverridesAndIgnoreDecidePerModule) {
    ModuleRules rules;
    rules.overrides.push_back(parseOverride("down_proj=gptq8"));
    rules.overrides.push_back(parseOverride("layers\\.0\\.=fp8"));
    rules.ignore.push_back("layers\\.1\\.mlp");
    RuleMatcher m(rules);
    const auto down0 = m.decide("model.layers.0.mlp.down_proj");
    EXPECT_EQ(down0.kind, RuleDecision::Kind::Fixed);
    EXPECT_EQ(down0.method->name, "gptq8");  // the first override that matches wins
    EXPECT_EQ(m.decide("model.layers.0.self_attn.q_proj").method->name, "fp8");
    EXPECT_EQ(m.decide("model.layers.1.mlp.down_proj").kind, RuleDecision::Kind::Dense);  // ignore wins
    EXPECT_EQ(m.decide("model.layers.1.self_attn.q_proj").kind, RuleDecision::Kind::Free);
    EXPECT_NO_THROW(m.requireEveryRuleUsed());
    EXPECT_NE(refusal([] { parseOverride("down_proj"); }).find("REGEX=METHOD"), std::string::npos);
    EXPECT_NE(refusal([] { parseOverride("down_proj=gptq9"); }), "");
}

TEST(MixedRules, ARuleThatMatchesNothingIsRefused) {
    ModuleRules rules;
    rules.ignore.push_back("lm_head");
    const SensitivityTable t = syntheticTable(2);
    const std::string why = refusal([&] { MixedPrecisionPlanner(t, rules, {"rtn3", "rtn4"}); });
    EXPECT_NE(why.find("--ignore 'lm_head' matches no quantized linear"), std::string::npos) << why;
}

TEST(MixedRules, ARuleOverPartOfAFusedGroupIsRefusedNamingTheModule) {
    ModuleRules rules;
    rules.overrides.push_back(parseOverride("layers\\.1\\.self_attn\\.k_proj=rtn8"));
    const SensitivityTable t = syntheticTable(2);
    const std::string why = refusal([&] { MixedPrecisionPlanner(t, rules, {"rtn3", "rtn4"}); });
    EXPECT_NE(why.find("model.layers.1.self_attn.k_proj is ruled differently"), std::string::npos) << why;
}

// The report's record, one function for the CLI and the GUI: what was asked, then what ran.
TEST(MixedRecord, SaysWhatWasAskedThenWhatTheMixMeasuredAndItsAllocation) {
    nlohmann::json rules =
        mixedPrecisionRecord({parseMethodList("gptq4,gptq8", 128), {"down_proj=gptq8"}, {"lm_head"}, ""});
    EXPECT_EQ(rules,
              (nlohmann::json{
                  {"candidates", {"gptq4", "gptq8"}}, {"overrides", {"down_proj=gptq8"}}, {"ignore", {"lm_head"}}}));
    MethodResult mixed;
    mixed.bitsPerWeight = 4.75;
    mixed.kl.meanKld.value = 0.0125;
    recordMixedResult(rules, mixed, nullptr);
    EXPECT_EQ(rules.at("bits_per_weight"), 4.75);
    EXPECT_EQ(rules.at("measured_kl"), 0.0125);
    EXPECT_FALSE(rules.contains("target_bpw") || rules.contains("allocation") || rules.contains("sensitivity"));

    nlohmann::json budget = mixedPrecisionRecord({parseMethodList("gptq4,gptq8", 128), {}, {}, "group-kl"});
    const nlohmann::json allocation = {
        {"target_bpw", 5.0}, {"predicted_kl", 0.01}, {"methods", nlohmann::json::object()}};
    recordMixedResult(budget, mixed, allocation);
    EXPECT_EQ(budget.at("sensitivity"), "group-kl");
    EXPECT_EQ(budget.at("target_bpw"), 5.0);
    EXPECT_EQ(budget.at("predicted_kl"), 0.01);
    EXPECT_EQ(budget.at("allocation"), allocation);
}

TEST(MixedPlanner, UnknownCandidatesAndBudgetsBelowTheCheapestAreRefused) {
    const SensitivityTable t = syntheticTable(2);
    EXPECT_NE(refusal([&] {
                  MixedPrecisionPlanner(t, {}, {"rtn3", "gptq5"});
              }).find("'gptq5' was not measured"),
              std::string::npos);
    const MixedPrecisionPlanner p(t, {}, {"rtn4", "rtn8"});
    EXPECT_DOUBLE_EQ(p.cheapestBpw(), 4.5);
    EXPECT_DOUBLE_EQ(p.richestBpw(), 8.5);
    EXPECT_NE(refusal([&] { (void)p.at(4.4); }).find("below the cheapest allocation (4.5000"), std::string::npos);
    EXPECT_NO_THROW((void)p.at(4.5));
}

TEST(MixedPlanner, TheAllocationIsTheBruteForceOptimumAtEveryBudget) {
    for (Sensitivity measure : {Sensitivity::OutputError, Sensitivity::GroupKl}) {  // both choose per fused group
        const SensitivityTable t = syntheticTable(2, measure);                      // 8 groups, 3^8 assignments
        const MixedPrecisionPlanner p(t, {}, {"rtn3", "rtn4", "rtn8"});
        for (double budget : {3.5, 3.9, 4.2, 4.5, 5.0, 6.1, 7.3, 8.5}) {
            const MixedAllocation a = p.at(budget);
            EXPECT_LE(a.bitsPerWeight, budget + 1e-12);
            EXPECT_NEAR(a.predictedKl, bruteForceBest(t, {0, 1, 2}, budget), 1e-12) << budget;
        }
    }
}

TEST(MixedPlanner, TheFrontierFallsAsTheBudgetGrowsAndStartsAndEndsAtTheUniformChoices) {
    const SensitivityTable t = syntheticTable(4);
    const MixedPrecisionPlanner p(t, {}, {"rtn3", "rtn4", "rtn8"});
    const auto f = p.frontier(24);
    ASSERT_GE(f.size(), 5u);
    EXPECT_NEAR(f.front().predictedKl, t.uniformPredictedKl(0), 1e-12);
    EXPECT_NEAR(f.back().predictedKl, t.uniformPredictedKl(2), 1e-12);
    for (std::size_t i = 1; i < f.size(); ++i) {
        EXPECT_GT(f[i].bitsPerWeight, f[i - 1].bitsPerWeight - 1e-12);
        EXPECT_LT(f[i].predictedKl, f[i - 1].predictedKl + 1e-15);
    }
    // The uniform 4-bit bpw is one of the budgets, and the allocation there beats uniform rtn4.
    bool found = false;
    for (const auto& a : f)
        if (a.targetBpw == 4.5) {
            found = true;
            EXPECT_LT(a.predictedKl, t.uniformPredictedKl(1));
        }
    EXPECT_TRUE(found);
}

TEST(MixedPlanner, RulesFixOrDropGroupsBeforeTheAllocation) {
    const SensitivityTable t = syntheticTable(2);
    ModuleRules rules;
    rules.overrides.push_back(parseOverride("down_proj=rtn8"));
    rules.ignore.push_back("layers\\.0\\.self_attn\\.o_proj");
    const MixedPrecisionPlanner p(t, rules, {"rtn3", "rtn4"});
    const MixedAllocation a = p.at(5.0);
    for (std::size_t g = 0; g < t.groups.size(); ++g) {
        const auto& group = t.groups[g];
        if (group.modules.front() == "mlp.down_proj")
            EXPECT_EQ(a.choice[g], 2);  // rtn8, though not a candidate
        else if (group.layer == 0 && group.modules.front() == "self_attn.o_proj")
            EXPECT_EQ(a.choice[g], -1);
        else
            EXPECT_TRUE(a.choice[g] == 0 || a.choice[g] == 1);
    }
    const MixedMethods mix = p.methods(a, "mix");
    EXPECT_EQ(mix.methodOf(0, "self_attn.o_proj"), nullptr);
    EXPECT_EQ(mix.methodOf(1, "mlp.down_proj")->name, "rtn8");
    // Cheapest: everything free at rtn3, the down_projs at 8.5, o_proj of layer 0 not counted.
    double bits = 0, params = 0;
    for (const auto& g : t.groups) {
        if (g.layer == 0 && g.modules.front() == "self_attn.o_proj") continue;
        bits += double(g.params) * (g.modules.front() == "mlp.down_proj" ? 8.5 : 3.5);
        params += double(g.params);
    }
    EXPECT_NEAR(p.cheapestBpw(), bits / params, 1e-12);
}

TEST(MixedPlanner, LayerKlChoosesOneMethodPerLayer) {
    const SensitivityTable t = syntheticTable(3, Sensitivity::LayerKl);
    const MixedPrecisionPlanner p(t, {}, {"rtn3", "rtn4", "rtn8"});
    const MixedAllocation a = p.at(5.0);
    for (std::size_t g = 0; g < t.groups.size(); ++g) EXPECT_EQ(a.choice[g], a.choice[g - g % 4]);
    // Brute force over the 27 per-layer choices.
    double best = std::numeric_limits<double>::infinity();
    for (int c0 = 0; c0 < 3; ++c0)
        for (int c1 = 0; c1 < 3; ++c1)
            for (int c2 = 0; c2 < 3; ++c2) {
                const int c[3] = {c0, c1, c2};
                double bits = 0, params = 0, damage = 0;
                for (const auto& g : t.groups) {
                    bits += g.bitsPerWeight[std::size_t(c[g.layer])] * double(g.params);
                    params += double(g.params);
                    damage += g.damage[std::size_t(c[g.layer])];
                }
                if (bits / params <= 5.0) best = std::min(best, damage);
            }
    EXPECT_NEAR(a.predictedKl, best, 1e-12);
}

namespace {

std::filesystem::path syntheticDir() {
    static const std::filesystem::path dir = [] {
        auto d = std::filesystem::temp_directory_path() / ("qs_mixed_" + std::to_string(::getpid()));
        std::filesystem::remove_all(d);
        test::writeSyntheticCheckpoint(d, {});
        return d;
    }();
    return dir;
}

JobPlan syntheticPlan() {
    JobPlan plan;
    plan.checkpoint = syntheticDir();
    plan.calibration = test::syntheticTokens(8, 64, 96, 11);
    plan.evaluation = test::syntheticTokens(4, 64, 96, 12);
    return plan;
}

MixedMethods everyLinear(const std::string& method, int layers) {
    MixedMethods mix;
    mix.name = "mix";
    mix.layers.resize(std::size_t(layers));
    for (auto& l : mix.layers)
        for (auto module : model::LayerWeights::kLinearModules) l.emplace(std::string(module), parseMethod(method, 32));
    return mix;
}

}  // namespace

TEST(MixedJob, AMixOfOneMethodIsThatMethodBitForBit) {
    JobPlan plan = syntheticPlan();
    plan.methods = parseMethodList("rtn4,gptq3", 32);
    MixedMethods mix = everyLinear("rtn4", 2);
    plan.mixed = {mix};
    const JobResult r = Job(std::move(plan)).run({}, CancelToken{});
    ASSERT_EQ(r.methods.size(), 3u);
    const auto& uniform = r.methods[0];
    const auto& mixed = r.methods[2];
    ASSERT_TRUE(mixed.error.empty()) << mixed.error;
    EXPECT_EQ(mixed.method.name, "mix");
    EXPECT_EQ(mixed.kl.meanKld.value, uniform.kl.meanKld.value);
    EXPECT_EQ(mixed.bitsPerWeight, uniform.bitsPerWeight);
    for (std::size_t l = 0; l < 2; ++l)
        for (const auto& [module, q] : uniform.layers[l]) {
            EXPECT_EQ(mixed.layers[l].at(module)->codes, q->codes) << module;
            EXPECT_EQ(mixed.layers[l].at(module)->effectiveWeight(), q->effectiveWeight()) << module;
        }
}

TEST(MixedJob, EachLinearGetsItsOwnMethodAndDenseLinearsStayOut) {
    JobPlan plan = syntheticPlan();
    plan.methods = parseMethodList("rtn2", 32);
    MixedMethods mix = everyLinear("rtn2", 2);
    mix.layers[0].erase("mlp.down_proj");  // dense
    for (auto m : kFusedGroups[0]) mix.layers[1].at(std::string(m)) = parseMethod("gptq8", 32);
    plan.mixed = {mix};
    const JobResult r = Job(std::move(plan)).run({}, CancelToken{});
    const auto& mixed = r.methods[1];
    ASSERT_TRUE(mixed.error.empty()) << mixed.error;
    EXPECT_EQ(mixed.layers[0].count("mlp.down_proj"), 0u);
    EXPECT_EQ(mixed.layers[0].size(), 6u);
    EXPECT_EQ(mixed.layers[1].at("self_attn.k_proj")->bits, 8);
    EXPECT_EQ(mixed.layers[1].at("self_attn.o_proj")->bits, 2);
    for (const auto& log : mixed.modules)
        EXPECT_EQ(log.method, log.layer == 1 && log.module.starts_with("self_attn.") && log.module != "self_attn.o_proj"
                                  ? "gptq8"
                                  : "rtn2")
            << log.module;
    // Fewer and gentler quantized linears than uniform 2-bit: less damage.
    EXPECT_LT(mixed.kl.meanKld.value, r.methods[0].kl.meanKld.value);
}

// The Job's per-group KL (the group's quantized linears in the original layer, the original layers
// after it) against the end-to-end KL of a mix in which only that group is quantized: RTN does not
// depend on its inputs, so the two runs must compute the same model.
TEST(MixedJob, PerGroupKlIsTheKlOfAMixWithOnlyThatGroupQuantized) {
    JobPlan plan = syntheticPlan();
    plan.methods = parseMethodList("rtn2", 32);
    plan.perGroupKl = true;
    const std::vector<std::pair<int, std::size_t>> probes = {{0, 2}, {1, 0}, {1, 3}};
    for (const auto& [layer, group] : probes) {
        MixedMethods mix;
        mix.name = "only " + moduleName(layer, kFusedGroups[group].front());
        mix.layers.resize(2);
        for (auto m : kFusedGroups[group])
            mix.layers[std::size_t(layer)].emplace(std::string(m), parseMethod("rtn2", 32));
        plan.mixed.push_back(mix);
    }
    const JobResult r = Job(std::move(plan)).run({}, CancelToken{});
    const auto& uniform = r.methods[0];
    ASSERT_EQ(uniform.perGroupKl.size(), 2u);
    double sum = 0;
    for (std::size_t i = 0; i < probes.size(); ++i) {
        const double perGroup = uniform.perGroupKl[std::size_t(probes[i].first)][probes[i].second];
        const double endToEnd = r.methods[i + 1].kl.meanKld.value;
        EXPECT_GT(perGroup, 0.0);
        EXPECT_NEAR(perGroup, endToEnd, 1e-6 * endToEnd) << r.methods[i + 1].label();
    }
    for (const auto& layer : uniform.perGroupKl)
        for (double kl : layer) sum += kl;
    // One group's damage is a part of the whole: each below the uniform KL, and together of its order.
    for (const auto& layer : uniform.perGroupKl)
        for (double kl : layer) EXPECT_LT(kl, uniform.kl.meanKld.value);
    EXPECT_GT(sum, uniform.kl.meanKld.value / 3);
    EXPECT_LT(sum, uniform.kl.meanKld.value * 3);
}

TEST(MixedJob, AwqCannotBeMixedPerLinear) {
    JobPlan plan = syntheticPlan();
    MixedMethods mix = everyLinear("rtn4", 2);
    mix.layers[1].at("mlp.up_proj") = parseMethod("awq4", 32);
    plan.mixed = {mix};
    const std::string why = refusal([&] { Job job(std::move(plan)); });
    EXPECT_NE(why.find("model.layers.1.mlp.up_proj"), std::string::npos) << why;
}

TEST(MixedMeasure, TheTableHoldsEachCandidatesBitsAndOutputErrors) {
    JobResult measured;
    const SensitivityTable t = measureSensitivity(syntheticPlan(), parseMethodList("rtn2,rtn4,rtn8", 32),
                                                  Sensitivity::OutputError, {}, CancelToken{}, &measured);
    ASSERT_EQ(t.groups.size(), 8u);
    for (std::size_t c = 0; c < 3; ++c) {
        // Σ params·bpw over the groups is the uniform result's bits over the linears.
        double bits = 0, params = 0;
        for (const auto& g : t.groups) bits += g.bitsPerWeight[c] * double(g.params), params += double(g.params);
        EXPECT_NEAR(bits / params, measured.methods[c].bitsPerWeight, 1e-9);
        EXPECT_NEAR(bits / params, t.uniformBpw[c], 1e-9);
    }
    for (const auto& g : t.groups) {
        EXPECT_GT(g.damage[0], g.damage[1]);
        EXPECT_GT(g.damage[1], g.damage[2]);
        double sum = 0;  // the group's damage is Σ relative output error² of its linears
        for (const auto& log : measured.methods[1].modules)
            if (log.layer == g.layer && std::find(g.modules.begin(), g.modules.end(), log.module) != g.modules.end())
                sum += log.outputError * log.outputError;
        EXPECT_NEAR(g.damage[1], sum, 1e-12 * sum);
    }
    // The bits alone, without the pass (what refuses a budget before any work): the same to 0.01 bit.
    const SensitivityTable bits =
        bitsOnlyTable(model::ModelConfig::fromCheckpoint(io::Checkpoint::open(syntheticDir())),
                      parseMethodList("rtn2,rtn4,rtn8", 32));
    ASSERT_EQ(bits.groups.size(), t.groups.size());
    for (std::size_t g = 0; g < t.groups.size(); ++g)
        for (std::size_t c = 0; c < 3; ++c)
            EXPECT_NEAR(bits.groups[g].bitsPerWeight[c], t.groups[g].bitsPerWeight[c], 0.01) << g;
    // The fitted factor puts the uniform predictions near the measured KL (within a factor of 3 here).
    for (std::size_t c = 0; c < 2; ++c) {
        EXPECT_GT(t.uniformPredictedKl(c), t.uniformKl[c] / 3) << c;
        EXPECT_LT(t.uniformPredictedKl(c), t.uniformKl[c] * 3) << c;
    }
}

namespace {

JobPlan demoPlan() {
    const std::filesystem::path demo = std::filesystem::path(QS_RESOURCES_DIR) / "demo";
    const model::Tokenizer tokenizer = model::Tokenizer::fromFile(demo);
    JobPlan plan;
    plan.checkpoint = demo;
    plan.calibration = tokenWindows(tokenizer, loadTexts(demo / "calibration.txt"), 16, 128, "calibration.txt");
    plan.evaluation = tokenWindows(tokenizer, loadTexts(demo / "eval.txt"), 16, 128, "eval.txt");
    return plan;
}

double candidateKl(const SensitivityTable& t, const std::string& name) {
    for (std::size_t c = 0; c < t.candidates.size(); ++c)
        if (t.candidates[c].name == name) return t.uniformKl[c];
    return std::nan("");
}

// The proof: at a budget equal to a uniform method's bpw, the allocation's measured KL is
// below that method's and not above the best uniform method at or below the budget; and the
// frontier's predicted KL ranks its allocations as their measured KL does.
void proveOnDemo(Sensitivity measure, const std::string& budgetMethod, bool strictlyBetter, double minRankCorrelation,
                 int frontierBudgets = 16) {
    const std::vector<std::string> names = {"gptq2", "gptq3", "gptq4", "gptq8", "nvfp4"};
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ",") + n;
    const SensitivityTable t = measureSensitivity(demoPlan(), parseMethodList(list, 64), measure, {}, CancelToken{});
    const MixedPrecisionPlanner planner(t, {}, names);
    const SensitivityTable bits =
        bitsOnlyTable(model::ModelConfig::fromCheckpoint(io::Checkpoint::open(demoPlan().checkpoint)), t.candidates);
    for (std::size_t g = 0; g < t.groups.size();
         ++g)  // GPTQ as RTN on its grid, NVFP4 from random weights: the measured bits
        for (std::size_t c = 0; c < names.size(); ++c)
            EXPECT_NEAR(bits.groups[g].bitsPerWeight[c], t.groups[g].bitsPerWeight[c], 0.01) << g;
    std::size_t budgetIndex = 0;
    while (t.candidates[budgetIndex].name != budgetMethod) ++budgetIndex;
    const double budget = t.uniformBpw[budgetIndex];
    const auto frontier = planner.frontier(frontierBudgets);
    JobPlan plan = demoPlan();
    plan.mixed.push_back(planner.methods(planner.at(budget), "at budget"));
    for (std::size_t i = 0; i < frontier.size(); ++i)
        plan.mixed.push_back(planner.methods(frontier[i], "point " + std::to_string(i)));
    const JobResult r = Job(std::move(plan)).run({}, CancelToken{});
    const double mixed = r.methods.front().kl.meanKld.value;
    double bestUniform = std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < t.candidates.size(); ++c)
        if (t.uniformBpw[c] <= budget + 1e-12) bestUniform = std::min(bestUniform, t.uniformKl[c]);
    std::cout << sensitivityName(measure) << " at " << budget << " bpw (" << budgetMethod << "): mixed KL " << mixed
              << " (" << r.methods.front().bitsPerWeight << " bpw), " << budgetMethod << " "
              << candidateKl(t, budgetMethod) << ", best uniform at or below " << bestUniform << "\n";
    EXPECT_LE(r.methods.front().bitsPerWeight, budget + 1e-9);
    if (strictlyBetter) {
        EXPECT_LT(mixed, candidateKl(t, budgetMethod));
    }
    EXPECT_LE(mixed, bestUniform);
    std::vector<double> predicted, measured;
    for (std::size_t i = 0; i < frontier.size(); ++i) {
        predicted.push_back(frontier[i].predictedKl);
        measured.push_back(r.methods[i + 1].kl.meanKld.value);
        std::cout << "  " << frontier[i].bitsPerWeight << " bpw: predicted " << predicted.back() << ", measured "
                  << measured.back() << "\n";
    }
    const double rho = analysis::spearmanCorrelation(predicted, measured);
    std::cout << "  Spearman over " << frontier.size() << " frontier points: " << rho << "\n";
    EXPECT_GE(rho, minRankCorrelation);
}

}  // namespace

TEST(MixedDemo, OutputErrorAllocationBeatsUniformNvfp4AtItsBpw) {
    proveOnDemo(Sensitivity::OutputError, "nvfp4", true, 0.8);
}

TEST(MixedDemo, LayerKlAllocationBeatsUniformNvfp4AtItsBpw) { proveOnDemo(Sensitivity::LayerKl, "nvfp4", true, 0.8); }

// At gptq4's own bits the output-error and layer-kl allocations are gptq4 everywhere (they tie): the
// group's KL sees that the first layer's attention is worth 8 bits paid for by the second layer's MLP.
TEST(MixedDemo, GroupKlAllocationBeatsUniformGptq4AtItsBpw) {
    proveOnDemo(Sensitivity::GroupKl, "gptq4", true, 0.8, 8);
}

namespace {

// A 4-layer synthetic model whose `fragile` layers write six times more into the residual stream:
// the candidates measured under `measure`, the allocation at candidate `budgetIndex`'s own bits, and
// that allocation quantized and measured.
struct FragileRun {
    SensitivityTable table;
    MixedAllocation allocation;
    MethodResult mixed;
};

FragileRun runFragile(const std::vector<int>& fragile, const std::string& candidates, Sensitivity measure,
                      std::size_t budgetIndex) {
    const auto dir = std::filesystem::temp_directory_path() / ("qs_mixed_fragile_" + std::to_string(::getpid()));
    test::SyntheticModel model;
    model.layers = 4;
    model.fragileLayers = fragile;
    test::writeSyntheticCheckpoint(dir, model);
    JobPlan plan;
    plan.checkpoint = dir;
    plan.calibration = test::syntheticTokens(8, 64, 96, 11);
    plan.evaluation = test::syntheticTokens(8, 64, 96, 12);
    FragileRun run;
    const auto methods = parseMethodList(candidates, 32);
    run.table = measureSensitivity(plan, methods, measure, {}, CancelToken{});
    const MixedPrecisionPlanner planner(run.table, {}, namesOf(methods));
    run.allocation = planner.at(run.table.uniformBpw[budgetIndex]);
    plan.mixed = {planner.methods(run.allocation, "mix")};
    run.mixed = Job(std::move(plan)).run({}, CancelToken{}).methods.front();
    std::filesystem::remove_all(dir);
    return run;
}

}  // namespace

// Layer 2 fragile: per-layer KL sees that its noise costs more, and the allocation at uniform rtn4's
// bpw gives it more bits.
TEST(MixedFragile, LayerKlProtectsTheFragileLayer) {
    const FragileRun run = runFragile({2}, "rtn3,rtn4,rtn5,rtn6", Sensitivity::LayerKl, 1);
    const SensitivityTable& t = run.table;
    const MixedAllocation& a = run.allocation;
    const double kl = run.mixed.kl.meanKld.value;
    std::cout << "fragile layer 2 at " << t.uniformBpw[1] << " bpw: " << allocationSummary(t, a) << ", layer 2 gets "
              << t.candidates[std::size_t(a.choice[8])].name << "; mixed KL " << kl << ", rtn4 " << t.uniformKl[1]
              << ", rtn3 " << t.uniformKl[0] << "\n";
    EXPECT_GT(a.choice[8], 1) << "layer 2 gets more than 4 bits";
    EXPECT_LT(kl, t.uniformKl[1]);
    EXPECT_LE(kl, std::min(t.uniformKl[0], t.uniformKl[1]));
}

// Layers 1 and 3 fragile, with the demo's spread of candidates (2, 3, 4 and 8 bits): at uniform
// rtn4's bits the group-kl allocation measures below rtn4 and below every uniform method at or under
// the budget.
TEST(MixedFragile, GroupKlBeatsUniformRtn4AtItsBpw) {
    const FragileRun run = runFragile({1, 3}, "rtn2,rtn3,rtn4,rtn8", Sensitivity::GroupKl, 2);
    const SensitivityTable& t = run.table;
    const double kl = run.mixed.kl.meanKld.value;
    std::cout << "fragile layers 1 and 3 at " << t.uniformBpw[2]
              << " bpw (group-kl): " << allocationSummary(t, run.allocation) << " at " << run.mixed.bitsPerWeight
              << " bpw; predicted " << run.allocation.predictedKl << ", measured " << kl << "; uniform rtn2 "
              << t.uniformKl[0] << ", rtn3 " << t.uniformKl[1] << ", rtn4 " << t.uniformKl[2] << "\n";
    EXPECT_LE(run.mixed.bitsPerWeight, t.uniformBpw[2] + 1e-9);
    EXPECT_LT(kl, t.uniformKl[2]);
    EXPECT_LE(kl, std::min({t.uniformKl[0], t.uniformKl[1], t.uniformKl[2]}));
}
