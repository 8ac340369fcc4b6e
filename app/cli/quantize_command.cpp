#include "quantize_command.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/io/checkpoint.h"
#include "qs/model/gguf_tokenizer.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/export_check.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gguf_imatrix.h"
#include "qs/pipeline/gguf_result_export.h"
#include "qs/pipeline/gguf_type_mix.h"
#include "qs/pipeline/gpt_oss_mxfp4_export.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/job_report.h"
#include "qs/pipeline/mixed_methods.h"
#include "qs/pipeline/mixed_precision_report.h"
#include "qs/pipeline/plan_builder.h"
#include "qs/pipeline/quantize_route.h"
#include "qs/pipeline/quantized_source.h"
#include "qs/pipeline/weight_only_quantize.h"

#include "checkpoint_warnings.h"
#include "human_format.h"
#include "matmul_option.h"
#include "mixed_options.h"
#include "progress_bar.h"
#include "rotate_option.h"
#include "serving_options.h"
#include "sigint_cancel.h"
#include "work_dir_options.h"

namespace qs::cli {
namespace {

struct QuantizeOptions {
    std::string path;
    std::string method;
    int bits = 0;  // 0: the method's own (or 4)
    int groupSize = 128;
    bool actOrder = false;
    bool sym = false;
    std::string format;
    std::string out;
    std::string calib;
    std::string imatrix;  // llama.cpp importance matrix for the GGUF methods
    int samples = 128;
    int seqLen = 512;
    std::uint64_t seed = 0;
    bool rotate = false;
    std::uint64_t rotationSeed = 0;
    bool force = false;
    bool overwrite = false;
    std::string imatrixOut;
    std::string llama2cTokenizer;
    bool allowNonFinite = false;
    std::string moeCalibration = "all";
    std::string matmul = "auto";
    ServingOptions serving;
    MixedOptions mixed;
    std::string candidates = "gptq2,gptq4,gptq8,fp8-channel,nvfp4";  // what ct-mixed holds (3-bit: --format gptq)
    std::string eval;
    int evalSamples = 32;
    bool weightsOnly = false;
    WorkDirOptions work;
};

// A quantized source is quantized from its decoded weights, which are the KL's reference: said in one line.
void printSourceNote(const pipeline::BuiltPlan& built) {
    if (built.quantizedSource) std::cout << built.quantizedSource->referenceNote() << std::endl;
}

bool hasDigit(const std::string& s) {
    return std::any_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// "--method gptq --bits 4 --act-order --sym" and "--method gptq4-act-sym" name the same thing.
pipeline::MethodSpec methodFrom(const QuantizeOptions& o) {
    std::string name = o.method;
    const bool takesBits = name == "rtn" || name == "gptq" || name == "gptaq" || name == "awq" || name == "trellis";
    if (takesBits) name += std::to_string(o.bits > 0 ? o.bits : (name == "trellis" ? 2 : 4));
    pipeline::MethodSpec spec = pipeline::parseMethod(name, o.groupSize);
    if (o.bits > 0 && !takesBits && hasDigit(o.method) && spec.bits != o.bits)
        throw Error("--bits " + std::to_string(o.bits) + " contradicts --method " + o.method);
    if (o.actOrder) {
        if (spec.kind != pipeline::MethodKind::Gptq) throw Error("--act-order applies to GPTQ only");
        spec.actOrder = true;
    }
    if (o.sym) {
        if (!spec.integerGrid()) throw Error("--sym applies to the integer methods (rtn, gptq, awq) only");
        spec.sym = true;
    }
    return spec;
}

// What a GGUF export takes from the options: overwrite, non-finite weights, a llama2.c tokenizer.
pipeline::GgufExportOptions ggufOptions(const QuantizeOptions& o, const io::Checkpoint& checkpoint) {
    pipeline::GgufExportOptions options;
    options.overwrite = o.overwrite;
    options.allowNonFinite = o.allowNonFinite;
    if (!o.llama2cTokenizer.empty())
        options.sentencePiece = pipeline::GgufSentencePieceVocabulary{
            model::readLlama2cTokenizer(o.llama2cTokenizer, checkpoint.config().value("vocab_size", 0)), 1, 2, true};
    return options;
}

// The GGUF file of a GGUF method's result (and its imatrix when asked).
std::string writeGgufOutputs(const QuantizeOptions& o, const io::Checkpoint& checkpoint,
                             const pipeline::MethodResult& result, const pipeline::JobPlan& plan,
                             const std::string& calibrationFile, ProgressBar& bar, const CancelToken& cancel) {
    pipeline::GgufExportOptions options = ggufOptions(o, checkpoint);
    const auto written = pipeline::writeGgufResult(checkpoint, result, o.out, options, bar.callback(), cancel);
    std::string what = written.string();
    if (!o.imatrixOut.empty()) {
        const pipeline::ImatrixInfo info{{calibrationFile},
                                         static_cast<std::uint32_t>(plan.calibration.size()),
                                         static_cast<std::uint32_t>(o.seqLen)};
        what += " and " + pipeline::writeImatrix(result, model::ModelConfig::fromCheckpoint(checkpoint), o.imatrixOut,
                                                 info, o.overwrite)
                              .string();
    }
    return what;
}

// --method with --override / --ignore: into a GGUF, ggml's type names ("q4_K") are one type per linear.
pipeline::MethodSpec mixMethodFrom(const QuantizeOptions& o, bool gguf) {
    pipeline::MethodSpec method = methodFrom(o);
    if (gguf && method.ggufFileMix())
        if (pipeline::MethodSpec single = pipeline::parseMixMethod(o.method, o.groupSize); single.ggmlType)
            return single;
    return method;
}

// A method a mix cannot hold, or not in `format` (pipeline::mixRefusal, mixFormatRefusal).
void refuseInMix(const pipeline::MethodSpec& m, const std::string& format) {
    for (const std::string& why : {pipeline::mixRefusal(m), pipeline::mixFormatRefusal(m, format)})
        if (!why.empty()) throw Error(why);
}

// The mix as one GGUF file, the report (quantscope_report.json's content) in its metadata.
std::filesystem::path writeGgufMix(const QuantizeOptions& o, const io::Checkpoint& checkpoint,
                                   const pipeline::MethodResult& mixed, const nlohmann::json& settings,
                                   ProgressBar& bar, const CancelToken& cancel) {
    pipeline::GgufExportOptions options = ggufOptions(o, checkpoint);
    nlohmann::json report = pipeline::toJson(mixed);  // as exportCheckpoint's quantscope_report.json
    report["format"] = "gguf";
    report["source"] = o.path;
    report["settings"] = settings;
    options.extraMetadata.set(std::string(pipeline::kGgufReportKey), io::GgufValue::string(report.dump()));
    return pipeline::writeGgufMixResult(checkpoint, mixed, o.out, options, bar.callback(), cancel);
}

// What a mixed run measured and chose, for the report; empty without a budget.
struct MixedChoice {
    pipeline::MixedMethods methods;
    nlohmann::json allocation;  // toJson(table, allocation) with a budget, else null
};

// --target-bpw: the measurement pass over the candidates, then the allocation at the budget.
MixedChoice allocate(const QuantizeOptions& o, const pipeline::JobPlan& plan,
                     const std::vector<pipeline::MethodSpec>& candidates, const pipeline::ModuleRules& rules,
                     ProgressBar& bar, const CancelToken& cancel) {
    const auto sensitivity = pipeline::parseSensitivity(o.mixed.sensitivity);
    const auto table =
        pipeline::measureSensitivity(plan, measuredMethods(candidates, rules), sensitivity, bar.callback(), cancel);
    const pipeline::MixedPrecisionPlanner planner(table, rules, namesOf(candidates));
    const pipeline::MixedAllocation allocation = planner.at(*o.mixed.targetBpw);
    char name[64];
    std::snprintf(name, sizeof name, "mixed %.2f bpw", *o.mixed.targetBpw);
    return {planner.methods(allocation, name), pipeline::toJson(table, allocation)};
}

// --target-bpw, or a method with --override / --ignore: a method per linear, quantized, measured and exported.
void runMixedQuantize(const QuantizeOptions& o) {
    if (o.mixed.targetBpw && !o.method.empty())
        throw Error("--target-bpw chooses among --candidates: drop --method " + o.method);
    if (o.mixed.targetBpw && (o.bits > 0 || o.actOrder || o.sym))
        throw Error(
            "--bits, --act-order and --sym shape one method: with --target-bpw name them in --candidates "
            "(gptq4-act-sym)");
    if (!o.mixed.targetBpw && o.method.empty()) throw Error("--method is required (or --target-bpw with --candidates)");
    if (o.serving.kvCache != "none") throw Error("--kv-cache applies to one method, not to a mix of methods");
    const bool gguf = o.format == "gguf" || std::filesystem::path(o.out).extension() == ".gguf";
    const std::string format = gguf ? "gguf" : o.format.empty() ? "ct-mixed" : o.format;
    if (gguf && std::filesystem::path(o.out).extension() != ".gguf")
        throw Error("a mix written as GGUF is one file: --out " + o.out + " must end in .gguf");
    const io::Checkpoint checkpoint = io::Checkpoint::open(o.path);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(checkpoint);
    const int layers = config.numLayers;
    const pipeline::ModuleRules rules = rulesFrom(o.mixed, o.groupSize, config.arch.tensorPrefix);
    const std::vector<pipeline::MethodSpec> candidates = o.mixed.targetBpw
                                                             ? pipeline::parseMixMethodList(o.candidates, o.groupSize)
                                                             : std::vector{mixMethodFrom(o, gguf)};
    (void)pipeline::applyRules(candidates.front(), rules, layers, "");  // a bad rule is refused before any work
    if (o.mixed.targetBpw) refuseUnreachableBudget(*o.mixed.targetBpw, config, candidates, rules);
    for (const auto& m : measuredMethods(candidates, rules)) refuseInMix(m, format);
    if (!gguf) {
        const auto& encoder = pipeline::encoderForMethod(candidates.front(), format);
        for (const auto& m : measuredMethods(candidates, rules))
            if (const auto why = pipeline::exportRefusal(m, encoder, checkpoint); !why.empty())
                throw Error("cannot export " + m.name + " as " + std::string(encoder.name()) + ": " + why);
    }
    if (std::filesystem::exists(o.out) && !o.overwrite)
        throw Error(o.out + " already exists (pass --overwrite to replace it)");

    pipeline::PlanSettings planSettings;
    planSettings.checkpoint = o.path;
    planSettings.methods = measuredMethods(candidates, rules);
    planSettings.seed = o.seed;
    planSettings.allowNonFinite = o.allowNonFinite;
    planSettings.matmul = pipeline::parseMatmulChoice(o.matmul);
    planSettings.calibration = {o.calib, o.samples, o.seqLen};
    planSettings.evaluation = {o.eval, o.evalSamples, o.seqLen};
    pipeline::BuiltPlan built = pipeline::buildJobPlan(planSettings);
    printSourceNote(built);

    qs::CancelToken cancel;
    const SigintCancel sigint(cancel);
    ProgressBar bar("quantize");
    MixedChoice choice = o.mixed.targetBpw ? allocate(o, built.plan, candidates, rules, bar, cancel)
                                           : MixedChoice{pipeline::applyRules(candidates.front(), rules, layers,
                                                                              candidates.front().name + " with rules"),
                                                         nullptr};
    pipeline::JobPlan plan = std::move(built.plan);
    plan.methods.clear();
    plan.mixed = {choice.methods};
    pipeline::Job job(std::move(plan));
    const pipeline::JobResult result = job.run(bar.callback(), cancel, {}, o.force);
    const auto& mixed = result.methods.front();
    if (!mixed.error.empty()) throw Error(choice.methods.name + ": " + mixed.error);

    nlohmann::json record = pipeline::mixedPrecisionRecord(
        {candidates, o.mixed.overrides, o.mixed.ignore, o.mixed.targetBpw ? o.mixed.sensitivity : std::string()});
    pipeline::recordMixedResult(record, mixed, o.mixed.targetBpw ? choice.allocation : nlohmann::json(nullptr));
    nlohmann::json settings = {
        {"method", choice.methods.name},
        {"group_size", o.groupSize},
        {"seed", o.seed},
        {"calibration", {{"file", built.calibrationFile.string()}, {"samples", o.samples}, {"seq_len", o.seqLen}}},
        {"evaluation", {{"file", built.evaluationFile.string()}, {"samples", o.evalSamples}, {"seq_len", o.seqLen}}},
        {"mixed_precision", std::move(record)}};
    const std::filesystem::path written =
        gguf
            ? writeGgufMix(o, checkpoint, mixed, settings, bar, cancel)
            : pipeline::exportCheckpoint({o.path, o.out, format, o.overwrite, settings}, mixed, bar.callback(), cancel);
    bar.finish(true);
    std::cout << "wrote " << written.string() << " (" << format << ", " << choice.methods.name << ": "
              << mixed.bitsPerWeight << " bits per linear weight, measured KLD " << mixed.kl.meanKld.value;
    if (o.mixed.targetBpw)
        std::cout << ", predicted " << choice.allocation["predicted_kl"].get<double>() << "; "
                  << choice.allocation["summary"].get<std::string>();
    std::cout << ")\n";
}

// gpt-oss, whose stacked experts load as its own MXFP4 or dense only (compare measures the other methods): its
// experts back to gpt-oss's own MXFP4 layout, without a forward pass, so with the weight error in place of a KL.
void runGptOssQuantize(const QuantizeOptions& o) {
    if (!o.calib.empty() || o.mixed.any() || o.serving.kvCache != "none" || !o.imatrixOut.empty() || !o.imatrix.empty())
        throw Error(
            "gpt-oss MXFP4 takes no calibration, mix, KV cache or imatrix: it quantizes the experts' weights alone");
    qs::CancelToken cancel;
    const SigintCancel sigint(cancel);
    ProgressBar bar("quantize");
    const auto report = pipeline::exportGptOssMxfp4({o.path, o.out, o.overwrite}, bar.callback(), cancel);
    bar.finish(true);
    const auto worst = std::max_element(report.tensors.begin(), report.tensors.end(),
                                        [](const auto& a, const auto& b) { return a.relativeError < b.relativeError; });
    std::cout << "wrote " << report.written.string() << " (gpt-oss MXFP4: " << report.tensors.size()
              << " expert tensors, " << formatCount(report.quantizedWeights) << " weights at 4.25 bits; "
              << formatBytes(report.bytesBefore) << " -> " << formatBytes(report.bytesAfter) << ")\n"
              << "weight error ||W - Q|| / ||W||: largest " << worst->relativeError << " (" << worst->tensor << ")\n"
              << "no KL: gpt-oss's MXFP4 round trip is written from the weights alone, without an evaluation run\n";
}

// --weights-only: every linear from its weight alone, for architectures QuantScope does not run.
void runWeightsOnlyQuantize(const QuantizeOptions& o) {
    if (o.method.empty())
        throw Error("--weights-only quantizes with one --method (rtn, fp8, fp8-channel, mxfp4, nvfp4, nf4, trellis)");
    if (o.mixed.any() || !o.calib.empty() || !o.imatrixOut.empty() || !o.imatrix.empty() ||
        o.serving.kvCache != "none" || !o.eval.empty())
        throw Error("--weights-only runs no forward pass: no calibration, evaluation, mix, KV cache or imatrix");
    const pipeline::MethodSpec method = methodFrom(o);
    if (const auto why = pipeline::weightOnlyRefusal(method); !why.empty()) throw Error(why);
    const io::Checkpoint checkpoint = io::Checkpoint::open(o.path);
    const formats::FormatInfo format = formats::detect(checkpoint);
    pipeline::requireDecodableSource(checkpoint, format);
    const formats::LinearEncoder& encoder = pipeline::encoderForMethod(method, o.format);
    if (const auto why = pipeline::exportRefusal(method, encoder, checkpoint); !why.empty())
        throw Error("cannot export " + method.name + " as " + std::string(encoder.name()) + ": " + why);
    if (std::filesystem::exists(o.out) && !o.overwrite)
        throw Error(o.out + " already exists (pass --overwrite to replace it)");
    if (const auto quantized = pipeline::quantizedSource(format)) std::cout << quantized->weightsOnlyNote() << '\n';
    qs::CancelToken cancel;
    const SigintCancel sigint(cancel);
    ProgressBar bar("quantize");
    const nlohmann::json settings = {
        {"method", method.name}, {"group_size", method.groupSize}, {"seed", o.seed}, {"weights_only", true}};
    const pipeline::ExportRequest request{o.path, o.out, std::string(encoder.name()), o.overwrite, settings};
    const auto report = pipeline::exportWeightsOnly(request, checkpoint, method, o.seed, bar.callback(), cancel);
    bar.finish(true);
    const auto worst = std::max_element(report.linears.begin(), report.linears.end(),
                                        [](const auto& a, const auto& b) { return a.weightError < b.weightError; });
    std::cout << "wrote " << report.written.string() << " (" << encoder.name() << ", " << method.label() << ": "
              << report.linears.size() << " linears at " << report.bitsPerWeight << " bits per weight";
    if (!report.keptDense.empty())
        std::cout << "; " << report.keptDense.size() << " routers / tower linears kept dense";
    std::cout << ")\nweight error ||W - Q|| / ||W||: largest " << worst->weightError << " (" << worst->prefix << ")\n"
              << "no KL: quantized without a forward pass\n";
}

// The forward pass needs an architecture QuantScope runs; a method that needs none can do without one.
void requireForwardPass(const io::Checkpoint& checkpoint, const pipeline::MethodSpec& method) {
    try {
        (void)model::ModelConfig::fromCheckpoint(checkpoint);
    } catch (const Error& e) {
        if (!pipeline::weightOnlyRefusal(method).empty()) throw;
        throw Error(std::string(e.what()) + "; --weights-only quantizes its linears without running the model (no KL)");
    }
}

void runQuantize(const QuantizeOptions& o) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(o.path);
    printCheckpointWarnings(checkpoint);
    const std::optional<pipeline::MethodSpec> asked =
        o.method.empty() ? std::nullopt : std::optional<pipeline::MethodSpec>(methodFrom(o));
    const pipeline::QuantizeRoute route =
        pipeline::quantizeRoute(checkpoint, asked ? &*asked : nullptr, o.format, o.out);
    const bool gptOss = route == pipeline::QuantizeRoute::StackedExpertsMxfp4;
    if (o.work.any() && (gptOss || o.weightsOnly || o.mixed.any()))
        throw Error(
            "--work-dir and --resume keep the layers of one method quantized with the model's forward pass "
            "(not of --weights-only, gpt-oss's MXFP4 round trip or a mix of methods)");
    if (o.rotate && (gptOss || o.weightsOnly || o.mixed.any()))
        throw Error(
            "--rotate quantizes one method with the model's forward pass (not --weights-only, gpt-oss's "
            "MXFP4 round trip or a mix of methods)");
    if (gptOss) return runGptOssQuantize(o);
    if (o.weightsOnly) return runWeightsOnlyQuantize(o);
    if (o.mixed.any()) return runMixedQuantize(o);
    if (o.method.empty()) throw Error("--method is required (or --target-bpw with --candidates)");
    std::vector<pipeline::MethodSpec> methods{methodFrom(o)};
    const pipeline::ActivationCalibration activationCalibration = applyServingOptions(o.serving, methods);
    const pipeline::MethodSpec method = methods.front();
    requireForwardPass(checkpoint, method);
    const bool gguf = route == pipeline::QuantizeRoute::GgufFile;
    if (!gguf && (!o.imatrixOut.empty() || !o.imatrix.empty() || !o.llama2cTokenizer.empty()))
        throw Error("--imatrix, --imatrix-out and --llama2c-tokenizer apply to the GGUF methods only");
    const formats::LinearEncoder* encoder = gguf ? nullptr : &pipeline::encoderForMethod(method, o.format);
    if (encoder != nullptr)
        if (const auto why = pipeline::exportRefusal(method, *encoder, checkpoint); !why.empty())
            throw Error("cannot export " + method.name + " as " + std::string(encoder->name()) + ": " + why);
    if (std::filesystem::exists(o.out) && !o.overwrite)
        throw Error(o.out + " already exists (pass --overwrite to replace it)");
    if (!o.imatrixOut.empty() && std::filesystem::exists(o.imatrixOut) && !o.overwrite)
        throw Error(o.imatrixOut + " already exists (pass --overwrite to replace it)");

    pipeline::PlanSettings planSettings;
    planSettings.checkpoint = o.path;
    planSettings.methods = {method};
    planSettings.seed = o.seed;
    planSettings.allowNonFinite = o.allowNonFinite;  // the plan builder checks the input before any output
    planSettings.matmul = pipeline::parseMatmulChoice(o.matmul);
    planSettings.moeCalibrateAllExperts = o.moeCalibration == "all";
    planSettings.activationCalibration = activationCalibration;
    planSettings.imatrix = o.imatrix;
    planSettings.rotate = o.rotate;
    planSettings.rotationSeed = o.rotationSeed;
    // Calibration when the method needs it, or when asked for (it gives every linear its output error,
    // and the GGUF K-quants their importance, as llama-quantize --imatrix).
    const bool calibrate = method.needsCalibration() || !o.calib.empty() || !o.imatrixOut.empty();
    planSettings.calibration = {o.calib, calibrate ? o.samples : 0, o.seqLen};
    pipeline::BuiltPlan built = pipeline::buildJobPlan(planSettings);
    printSourceNote(built);
    nlohmann::json settings = {{"method", method.name},
                               {"group_size", method.groupSize},
                               {"seed", o.seed},
                               {"kv_cache", o.serving.kvCache},
                               {"activation_calibration", activationCalibration.label()}};
    if (!o.imatrix.empty()) settings["imatrix"] = o.imatrix;
    if (o.rotate) settings["rotation_seed"] = o.rotationSeed;
    if (calibrate)
        settings["calibration"] = {
            {"file", built.calibrationFile.string()}, {"samples", o.samples}, {"seq_len", o.seqLen}};
    const std::string calibrationPath = built.calibrationFile.string();

    qs::CancelToken cancel;
    const SigintCancel sigint(cancel);
    ProgressBar bar("quantize");
    applyWorkDirOptions(o.work, built.plan);
    pipeline::Job job(std::move(built.plan));
    const pipeline::JobResult result = job.run(bar.callback(), cancel, {}, o.force);
    const auto& methodResult = result.methods.front();
    if (!methodResult.error.empty()) throw Error(method.label() + ": " + methodResult.error);
    if (gguf) {
        const std::string written =
            writeGgufOutputs(o, checkpoint, methodResult, job.plan(), calibrationPath, bar, cancel);
        discardWorkDir(o.work);
        bar.finish(true);
        std::cout << "wrote " << written << " (gguf, " << method.label() << ", " << methodResult.bitsPerWeight
                  << " bits per linear weight)\n";
        return;
    }
    const pipeline::ExportRequest request{o.path, o.out, std::string(encoder->name()), o.overwrite, settings};
    const auto written = pipeline::exportCheckpoint(request, methodResult, bar.callback(), cancel);
    discardWorkDir(o.work);
    bar.finish(true);
    std::cout << "wrote " << written.string() << " (" << encoder->name() << ", " << method.label() << ")\n";
}

}  // namespace

void registerQuantize(CLI::App& app) {
    auto options = std::make_shared<QuantizeOptions>();
    CLI::App* cmd = app.add_subcommand("quantize", "Quantize a checkpoint with one method and export it");
    cmd->add_option("path", options->path,
                    "Checkpoint: .safetensors file or folder, or .gguf file; a quantized one is quantized from its "
                    "decoded weights")
        ->required();
    std::string ggufNames;
    for (const auto& t : pipeline::ggufFileTypes()) ggufNames += (ggufNames.empty() ? "" : " ") + std::string(t.name);
    cmd->add_option(
        "--method", options->method,
        "rtn, gptq, gptaq, awq (with --bits), or a name such as gptq4-act, fp8, fp8-channel; or llama-quantize's type "
        "of a "
        "GGUF file (" +
            ggufNames + ", any case; Q4_K = Q4_K_M); not with --target-bpw");
    cmd->add_option("--bits", options->bits, "Code bits of rtn / gptq / gptaq / awq (default 4)")
        ->check(CLI::Range(1, 8));
    cmd->add_option("--group-size", options->groupSize, "Group size of the integer methods (-1: per row)")
        ->capture_default_str();
    cmd->add_flag("--act-order", options->actOrder, "GPTQ: quantize columns by decreasing Hessian diagonal (desc_act)");
    cmd->add_flag("--sym", options->sym, "Symmetric integer grid (what vLLM's Marlin kernels run)");
    std::string formats;
    for (const auto* e : formats::allEncoders()) formats += (formats.empty() ? "" : ", ") + std::string(e->name());
    cmd->add_option(
        "--format", options->format,
        "Export layout (" + formats + ", gguf; gpt-oss-mxfp4 for a BF16 gpt-oss); default: the method's own");
    cmd->add_option("--out", options->out, "Destination folder, or .gguf file (must not exist unless --overwrite)")
        ->required();
    cmd->add_option(
        "--imatrix-out", options->imatrixOut,
        "GGUF methods: also write the calibration as llama.cpp's imatrix (GGUF format) for llama-quantize --imatrix");
    cmd->add_option("--llama2c-tokenizer", options->llama2cTokenizer,
                    "GGUF methods: a llama2.c tokenizer.bin to store as the SentencePiece tokenizer (models without "
                    "tokenizer.json)");
    cmd->add_option("--imatrix", options->imatrix,
                    "GGUF methods: weigh each linear's columns by llama.cpp's importance matrix from this file (GGUF "
                    "or legacy .dat, as llama-quantize --imatrix) instead of by the calibration");
    cmd->add_option("--calib", options->calib, "Calibration text (UTF-8 file or JSON list of strings)");
    cmd->add_option("--samples", options->samples, "Calibration sequences")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--seq-len", options->seqLen, "Tokens per sequence")
        ->capture_default_str()
        ->check(CLI::Range(2, 1 << 20));
    cmd->add_option("--seed", options->seed, "Seed (trellis rotations)")->capture_default_str();
    addRotateOptions(*cmd, options->rotate, options->rotationSeed);
    addMatmulOption(*cmd, options->matmul);
    cmd->add_flag("--force", options->force, "Run even when the predicted memory exceeds what is available");
    cmd->add_flag("--overwrite", options->overwrite, "Replace the destination if it exists");
    cmd->add_flag(
        "--weights-only", options->weightsOnly,
        "Quantize every linear from its weight alone, without running the model (architectures QuantScope does not "
        "run; rtn, fp8, mxfp4, nvfp4, nf4, trellis; no KL)");
    cmd->add_flag("--allow-nonfinite", options->allowNonFinite,
                  "Use linears whose weights are NaN or Inf instead of refusing them");
    cmd->add_option("--moe-calibration", options->moeCalibration,
                    "MoE models: calibrate every expert on every token (all) or on the tokens routed to it (routed)")
        ->capture_default_str()
        ->check(CLI::IsMember({"all", "routed"}));
    addServingOptions(*cmd, options->serving);
    addWorkDirOptions(*cmd, options->work);
    addMixedOptions(*cmd, options->mixed);
    cmd->add_option(
           "--candidates", options->candidates,
           "The methods --target-bpw chooses among (the default export, ct-mixed, holds all of them); ggml types "
           "(q3_K,q4_K,q5_K,q6_K,q8_0, ...) for one GGUF file (--format gguf)")
        ->capture_default_str();
    cmd->add_option("--eval", options->eval,
                    "With --target-bpw / --override / --ignore: the held-out text the mix's KL is measured on");
    cmd->add_option("--eval-samples", options->evalSamples, "Evaluation sequences of a mix")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->callback([options] { runQuantize(*options); });
}

}  // namespace qs::cli
