#include "mixed_options.h"

#include <cmath>
#include <cstdio>

#include "qs/pipeline/mixed_precision_report.h"

#include "text_table.h"

namespace qs::cli {
namespace {

std::string fixed(double v, const char* format) {
    if (!std::isfinite(v)) return "-";
    char text[32];
    std::snprintf(text, sizeof text, format, v);
    return text;
}

}  // namespace

void addMixedOptions(CLI::App& cmd, MixedOptions& options) {
    cmd.add_option(
           "--target-bpw", options.targetBpw,
           "Bits per quantized weight to allocate: a method per fused group of linears (q/k/v, o, gate/up, down), "
           "chosen among the candidates to minimise the predicted KL")
        ->check(CLI::PositiveNumber);
    cmd.add_option("--sensitivity", options.sensitivity,
                   "How each candidate's damage is measured for --target-bpw: group-kl (KL with one fused group "
                   "quantized at a time; "
                   "a forward pass per group), layer-kl (one layer at a time, chosen per layer; a pass per layer) or "
                   "output-error "
                   "(Hessian-weighted, no extra passes, the cheapest and the worst predictor)")
        ->capture_default_str()
        ->check(CLI::IsMember({"group-kl", "layer-kl", "output-error"}));
    cmd.add_option(
        "--override", options.overrides,
        "REGEX=METHOD: the linears whose name (model.layers.N.mlp.down_proj) the regex finds use METHOD (repeatable; "
        "a ggml type such as q8_0 in a GGUF mix)");
    cmd.add_option(
        "--ignore", options.ignore,
        "REGEX: keep the linears whose name it finds dense (repeatable); embeddings and lm_head always stay dense");
}

pipeline::ModuleRules rulesFrom(const MixedOptions& options, int groupSize, const std::string& tensorPrefix) {
    pipeline::ModuleRules rules;
    rules.tensorPrefix = tensorPrefix;
    for (const auto& o : options.overrides) rules.overrides.push_back(pipeline::parseOverride(o, groupSize));
    rules.ignore = options.ignore;
    return rules;
}

void refuseUnreachableBudget(double targetBpw, const model::ModelConfig& config,
                             const std::vector<pipeline::MethodSpec>& candidates, const pipeline::ModuleRules& rules) {
    const pipeline::SensitivityTable bits = pipeline::bitsOnlyTable(config, measuredMethods(candidates, rules));
    const pipeline::MixedPrecisionPlanner planner(bits, rules, namesOf(candidates));
    if (targetBpw < planner.cheapestBpw() - 0.01)
        (void)planner.at(targetBpw);  // throws the refusal the measured bits would
}

void printFrontier(const pipeline::SensitivityTable& table, const std::vector<pipeline::MixedAllocation>& frontier,
                   const pipeline::MixedAllocation& atBudget, std::ostream& out) {
    out << "\nfrontier (" << pipeline::sensitivityName(table.measure)
        << ", predicted KL = " << fixed(table.klPerDamage, "%.4g") << " x damage):\n";
    TextTable t({{"bits", TextTable::Align::Right}, {"predicted KLD", TextTable::Align::Right}, {"allocation"}, {""}});
    for (const auto& a : frontier)
        t.addRow({fixed(a.bitsPerWeight, "%.3f"), fixed(a.predictedKl, "%.6f"), pipeline::allocationSummary(table, a),
                  a.choice == atBudget.choice ? "<- --target-bpw " + fixed(atBudget.targetBpw, "%.3g") : ""});
    t.print(out);
    out << "at --target-bpw " << fixed(atBudget.targetBpw, "%.3g") << ": " << fixed(atBudget.bitsPerWeight, "%.3f")
        << " bits per weight, predicted KLD " << fixed(atBudget.predictedKl, "%.6f") << " ("
        << pipeline::allocationSummary(table, atBudget) << ")\n";
}

void printMeasuredAllocation(const pipeline::SensitivityTable& table, const pipeline::MixedAllocation& atBudget,
                             const pipeline::MethodResult& measured, std::ostream& out) {
    out << "\nthe allocation at --target-bpw " << fixed(atBudget.targetBpw, "%.3g")
        << ", quantized, beside the uniform methods:\n";
    TextTable t({{"method"},
                 {"bits", TextTable::Align::Right},
                 {"predicted KLD", TextTable::Align::Right},
                 {"measured KLD", TextTable::Align::Right}});
    t.addRow({measured.label(), fixed(measured.bitsPerWeight, "%.3f"), fixed(atBudget.predictedKl, "%.6f"),
              fixed(measured.kl.meanKld.value, "%.6f")});
    for (std::size_t c = 0; c < table.candidates.size(); ++c)
        t.addRow({table.candidates[c].name, fixed(table.uniformBpw[c], "%.3f"),
                  fixed(table.uniformPredictedKl(c), "%.6f"), fixed(table.uniformKl[c], "%.6f")});
    t.print(out);
}

}  // namespace qs::cli
