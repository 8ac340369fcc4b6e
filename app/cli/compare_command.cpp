#include "compare_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/backend.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/job_report.h"
#include "qs/pipeline/mixed_precision_report.h"
#include "qs/pipeline/plan_builder.h"

#include "checkpoint_warnings.h"
#include "human_format.h"
#include "matmul_option.h"
#include "mixed_options.h"
#include "progress_bar.h"
#include "rotate_option.h"
#include "serving_options.h"
#include "sigint_cancel.h"
#include "text_table.h"
#include "work_dir_options.h"

namespace qs::cli {
namespace {

constexpr const char* kAllMethods = "rtn4,gptq4,gptq4-act,awq4,fp8,mxfp4,nvfp4,nf4,trellis2,trellis3,rtn2";

struct CompareOptions {
    std::string path;
    std::string methods = kAllMethods;
    int groupSize = 128;
    std::string calib;
    std::string imatrix;  // llama.cpp importance matrix for the GGUF methods
    std::string eval;
    int samples = 128;
    int seqLen = 512;
    int evalSamples = 32;
    bool perLayer = false;
    bool noTrueSequential = false;
    bool rotate = false;
    std::uint64_t rotationSeed = 0;
    std::string moeCalibration = "all";
    std::string json;
    std::string log;
    bool force = false;
    std::uint64_t seed = 0;
    std::string device = "auto";
    std::string matmul = "auto";
    bool allowNonFinite = false;
    ServingOptions serving;
    MixedOptions mixed;
    WorkDirOptions work;
};

std::string fixed(double v, int digits) {
    if (!std::isfinite(v)) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.*f", digits, v);
    return text;
}

void printTable(const pipeline::JobResult& result, std::ostream& out) {
    TextTable table({{"format"},
                     {"bits", TextTable::Align::Right},
                     {"size", TextTable::Align::Right},
                     {"mean KLD", TextTable::Align::Right},
                     {"median", TextTable::Align::Right},
                     {"99%", TextTable::Align::Right},
                     {"same top p", TextTable::Align::Right},
                     {"PPL ratio", TextTable::Align::Right},
                     {"time", TextTable::Align::Right}});
    for (const auto& m : result.methods) {
        if (!m.error.empty()) {
            table.addRow({m.label(), "-", "-", "failed", "-", "-", "-", "-", "-"});
            continue;
        }
        table.addRow({m.label(), fixed(m.bitsPerWeight, 3), formatBytes(m.checkpointBytes),
                      fixed(m.kl.meanKld.value, 5), fixed(m.kl.kld.median, 5), fixed(m.kl.kld.p99, 5),
                      fixed(100.0 * m.kl.sameTop.value, 2) + " %", fixed(m.kl.pplRatio.value, 4),
                      fixed(m.seconds, 1) + " s"});
    }
    if (const auto& kv = result.kvCacheOnlyKl)  // the cache's damage alone, beside the original's 0
        table.addRow({"original weights, KV cache FP8", "-", "-", fixed(kv->meanKld.value, 5), fixed(kv->kld.median, 5),
                      fixed(kv->kld.p99, 5), fixed(100.0 * kv->sameTop.value, 2) + " %", fixed(kv->pplRatio.value, 4),
                      "-"});
    table.print(out);
    if (!result.methods.empty() && result.methods.front().kl.count > 0)
        out << "\nreference: PPL(base) " << fixed(result.methods.front().kl.pplBase.value, 3) << " over "
            << result.methods.front().kl.count << " positions; calibration " << result.calibrationTokens
            << " tokens; total " << fixed(result.seconds, 1) << " s\n";
    for (const auto& m : result.methods)
        if (!m.error.empty()) out << m.label() << ": " << m.error << '\n';
    for (const auto& m : result.methods) {
        if (m.perLayerKl.empty() || !m.error.empty()) continue;
        out << "per-layer KL, " << m.label() << ':';
        for (double kl : m.perLayerKl) out << ' ' << fixed(kl, 5);
        out << '\n';
    }
}

// What the GGUF rows measured: files weighed by the calibration's importance, as llama-quantize --imatrix
// makes them. `quantize` weighs only with --calib or --imatrix, so its file is another one without them.
void printGgufWeighting(const pipeline::JobResult& result, const std::string& imatrix, std::ostream& out) {
    const bool gguf = std::any_of(result.methods.begin(), result.methods.end(),
                                  [](const pipeline::MethodResult& m) { return m.method.gguf(); });
    if (!gguf) return;
    if (!imatrix.empty())
        out << "GGUF methods: weighed by the imatrix " << imatrix << " (quantize --imatrix writes these files)\n";
    else if (result.calibrationTokens > 0)
        out << "GGUF methods: weighed by the calibration's sum of x^2 per input column, as llama-quantize --imatrix; "
               "quantize weighs them only when given --calib or --imatrix\n";
}

// The backend of --device, announced on stderr in one line (and why the CPU stands in for auto).
// main() has registered the CUDA backend's factory when built with it.
std::shared_ptr<const pipeline::Backend> chooseBackend(const std::string& device) {
    pipeline::BackendSelection selection = pipeline::selectBackend(pipeline::parseDeviceChoice(device));
    std::cerr << selection.message << '\n';
    return std::move(selection.backend);
}

// The decoder's layer count and tensor prefix (the names --override / --ignore match).
std::pair<int, std::string> layersOf(const std::string& path) {
    const auto config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(path));
    return {config.numLayers, config.arch.tensorPrefix};
}

// Without a budget, the rules turn each method into a mix of its own: that method where the rules leave it.
std::vector<pipeline::MixedMethods> withRules(const std::vector<pipeline::MethodSpec>& methods,
                                              const pipeline::ModuleRules& rules, int layers) {
    std::vector<pipeline::MixedMethods> out;
    for (const auto& m : methods) out.push_back(pipeline::applyRules(m, rules, layers, m.name + " with rules"));
    return out;
}

// --target-bpw: the frontier of the measured candidates, printed, and in the JSON when asked; the
// allocation at the budget is quantized (a second Job on the same texts) and its measured KL printed
// beside the predicted one and the uniform methods'.
void reportFrontier(const CompareOptions& o, const pipeline::JobPlan& measured, const pipeline::JobResult& result,
                    const pipeline::ModuleRules& rules, const std::vector<std::string>& candidates,
                    nlohmann::json& json, const CancelToken& cancel) {
    const pipeline::SensitivityTable table =
        pipeline::sensitivityFromResult(result, pipeline::parseSensitivity(o.mixed.sensitivity));
    const pipeline::MixedPrecisionPlanner planner(table, rules, candidates);
    const pipeline::MixedAllocation atBudget = planner.at(*o.mixed.targetBpw);
    const auto frontier = planner.frontier();
    char name[64];
    std::snprintf(name, sizeof name, "mixed %.2f bpw", *o.mixed.targetBpw);
    pipeline::JobPlan plan = measured;
    plan.methods.clear();
    plan.perLayerKl = plan.perGroupKl = false;
    plan.mixed = {planner.methods(atBudget, name)};
    ProgressBar bar("quantize the allocation");
    const pipeline::JobResult mixed = pipeline::Job(std::move(plan)).run(bar.callback(), cancel, {}, o.force);
    bar.finish(true);
    const pipeline::MethodResult& m = mixed.methods.front();
    if (!m.error.empty()) throw Error(std::string(name) + ": " + m.error);
    printFrontier(table, frontier, atBudget, std::cout);
    printMeasuredAllocation(table, atBudget, m, std::cout);
    json["mixed_precision"] = pipeline::frontierJson(table, frontier);
    json["mixed_precision"]["at_budget"] = pipeline::toJson(table, atBudget);
    json["mixed_precision"]["at_budget"]["measured_kl"] = m.kl.meanKld.value;
    json["mixed_precision"]["at_budget"]["measured_kl_uncertainty"] = m.kl.meanKld.uncertainty;
    json["mixed_precision"]["at_budget"]["measured_bits_per_weight"] = m.bitsPerWeight;
}

void runCompare(const CompareOptions& o) {
    printCheckpointWarnings(io::Checkpoint::open(o.path));
    pipeline::PlanSettings settings;
    settings.checkpoint = o.path;
    // With a budget the methods are candidates per linear: ggml's type names (q4_K) are single types.
    const auto candidates = o.mixed.targetBpw ? pipeline::parseMixMethodList(o.methods, o.groupSize)
                                              : pipeline::parseMethodList(o.methods, o.groupSize);
    const auto [layers, tensorPrefix] = o.mixed.any() ? layersOf(o.path) : std::pair<int, std::string>{0, "model."};
    const pipeline::ModuleRules rules = rulesFrom(o.mixed, o.groupSize, tensorPrefix);
    if (o.mixed.any())
        (void)pipeline::applyRules(candidates.front(), rules, layers, "");  // a bad rule is refused before any work
    if (o.mixed.targetBpw) {
        const auto config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(o.path));
        config.requireDense(o.path, "a mix of methods (--target-bpw)");
        refuseUnreachableBudget(*o.mixed.targetBpw, config, candidates, rules);
    }
    settings.methods = o.mixed.targetBpw ? measuredMethods(candidates, rules) : candidates;
    settings.activationCalibration = applyServingOptions(o.serving, settings.methods);
    settings.calibration = {o.calib, o.samples, o.seqLen};
    settings.evaluation = {o.eval, o.evalSamples, o.seqLen};
    settings.perLayerKl = o.perLayer || (o.mixed.targetBpw && o.mixed.sensitivity == "layer-kl");
    const bool perGroupKl = o.mixed.targetBpw && o.mixed.sensitivity == "group-kl";
    settings.trueSequential = !o.noTrueSequential;
    settings.rotate = o.rotate;
    settings.rotationSeed = o.rotationSeed;
    settings.moeCalibrateAllExperts = o.moeCalibration == "all";
    settings.seed = o.seed;
    settings.allowNonFinite = o.allowNonFinite;  // the plan builder checks the input before any output
    settings.matmul = pipeline::parseMatmulChoice(o.matmul);
    settings.imatrix = o.imatrix;
    pipeline::BuiltPlan built = pipeline::buildJobPlan(settings);
    // A quantized source is quantized from its decoded weights, which are the KL's reference: one line says so.
    if (built.quantizedSource) std::cout << built.quantizedSource->referenceNote() << std::endl;
    pipeline::JobPlan plan = std::move(built.plan);
    if (!o.mixed.targetBpw && !rules.empty()) {
        plan.mixed = withRules(plan.methods, rules, layers);
        plan.methods.clear();
    }
    plan.backend = chooseBackend(o.device);  // after the checks of the input, whose errors stay one line
    if (plan.backend && plan.backend->isCuda())
        for (const auto& m : plan.methods)
            if (m.gptaq) std::cerr << m.name << " runs on the CPU: the device has no GPTAQ solver\n";
    plan.perGroupKl = perGroupKl;
    const pipeline::JobPlan measuredPlan = o.mixed.targetBpw ? plan : pipeline::JobPlan{};
    applyWorkDirOptions(o.work, plan);  // the measurement's run only: the frontier's quantization keeps no state

    pipeline::Job job(std::move(plan));
    std::unique_ptr<std::ofstream> log;
    if (!o.log.empty()) log = std::make_unique<std::ofstream>(o.log);
    pipeline::ModuleLogCallback onModule;
    if (log) onModule = [&](const pipeline::ModuleLog& m) { *log << pipeline::toJson(m).dump() << '\n' << std::flush; };

    qs::CancelToken cancel;
    const SigintCancel sigint(cancel);
    ProgressBar bar("compare");
    const pipeline::JobResult result = job.run(bar.callback(), cancel, onModule, o.force);
    bar.finish(true);
    printTable(result, std::cout);
    printGgufWeighting(result, o.imatrix, std::cout);
    nlohmann::json json = pipeline::toJson(result);
    if (o.mixed.targetBpw) reportFrontier(o, measuredPlan, result, rules, namesOf(candidates), json, cancel);
    if (!o.json.empty()) {
        std::ofstream out(o.json);
        if (!out) throw Error(o.json + ": cannot write the JSON report");
        out << json.dump(2) << '\n';
    }
    discardWorkDir(o.work);
}

}  // namespace

void registerCompare(CLI::App& app) {
    auto options = std::make_shared<CompareOptions>();
    CLI::App* cmd = app.add_subcommand("compare", "Quantize with several methods and compare their KL divergence");
    cmd->add_option("path", options->path,
                    "Checkpoint: .safetensors file or folder, or .gguf file; a quantized one is quantized from its "
                    "decoded weights")
        ->required();
    cmd->add_option("--methods", options->methods,
                    "Comma-separated methods; also gptaq4 (GPTAQ, exported as GPTQ), gptq4-act-sym, and "
                    "llama-quantize's GGUF types (q4_k_m, q5_k_m, q6_k, q8_0, ...)")
        ->capture_default_str();
    cmd->add_option("--group-size", options->groupSize, "Group size of the integer methods (-1: per row)")
        ->capture_default_str();
    cmd->add_option("--imatrix", options->imatrix,
                    "GGUF methods: weigh each linear's columns by llama.cpp's importance matrix from this file (GGUF "
                    "or legacy .dat, as llama-quantize --imatrix) instead of by the calibration");
    cmd->add_option("--calib", options->calib, "Calibration text (UTF-8 file or JSON list of strings)");
    cmd->add_option("--eval", options->eval, "Held-out evaluation text");
    cmd->add_option("--samples", options->samples, "Calibration sequences")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--seq-len", options->seqLen, "Tokens per sequence")
        ->capture_default_str()
        ->check(CLI::Range(2, 1 << 20));
    cmd->add_option("--eval-samples", options->evalSamples, "Evaluation sequences")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_flag("--per-layer", options->perLayer, "Also measure the KL with only one layer quantized, per layer");
    cmd->add_flag("--no-true-sequential", options->noTrueSequential,
                  "Calibrate GPTQ/AWQ on the original model's activations");
    addRotateOptions(*cmd, options->rotate, options->rotationSeed);
    cmd->add_option("--moe-calibration", options->moeCalibration,
                    "MoE models: calibrate every expert on every token (all) or on the tokens routed to it (routed)")
        ->capture_default_str()
        ->check(CLI::IsMember({"all", "routed"}));

    cmd->add_option("--json", options->json, "Write the results as JSON to this file");
    cmd->add_option("--log", options->log, "Write the per-module log as JSON lines to this file");
    cmd->add_option("--seed", options->seed, "Seed (trellis rotations)")->capture_default_str();
    cmd->add_option("--device", options->device, "Where quantization and the forward passes run: cpu, cuda or auto")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    addMatmulOption(*cmd, options->matmul);
    cmd->add_flag("--force", options->force, "Run even when the predicted memory exceeds what is available");
    cmd->add_flag("--allow-nonfinite", options->allowNonFinite,
                  "Use linears whose weights are NaN or Inf instead of refusing them");
    addServingOptions(*cmd, options->serving);
    addWorkDirOptions(*cmd, options->work);
    addMixedOptions(*cmd, options->mixed);  // --target-bpw: the candidates are --methods
    cmd->callback([options] { runCompare(*options); });
}

}  // namespace qs::cli
