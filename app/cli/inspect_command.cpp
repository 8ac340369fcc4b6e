#include "inspect_command.h"

#include <iostream>
#include <memory>
#include <regex>

#include "qs/analysis/tensor_stats.h"
#include "qs/error.h"
#include "qs/formats/config_check.h"
#include "qs/formats/detect.h"
#include "qs/formats/parameter_count.h"
#include "qs/io/checkpoint.h"

#include "inspect_hessian.h"
#include "inspect_report.h"
#include "progress_bar.h"
#include "sigint_cancel.h"

namespace qs::cli {
namespace {

struct InspectOptions {
    std::string path;
    bool json = false;
    bool tensors = false;
    bool stats = false;
    bool layers = false;
    std::string filter;
    int threads = 0;
    HessianOptions hessian;  // with --hessian LAYER
};

std::regex compileFilter(const std::string& pattern) {
    try {
        return std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
        throw Error("invalid --filter regular expression '" + pattern + "': " + e.what());
    }
}

std::vector<InspectedTensor> selectTensors(const io::Checkpoint& checkpoint, const std::string& filter) {
    const bool all = filter.empty();
    const std::regex pattern = all ? std::regex() : compileFilter(filter);
    std::vector<InspectedTensor> selected;
    for (const io::CheckpointTensor& t : checkpoint.tensors()) {
        if (all || std::regex_search(t.info->name, pattern)) selected.push_back({t.info, t.shard, std::nullopt});
    }
    return selected;
}

// Ctrl-C cancels the computation instead of killing the process mid-output.
void addStats(const io::Checkpoint& checkpoint, std::vector<InspectedTensor>& tensors, int threads) {
    std::vector<io::TensorView> views;
    views.reserve(tensors.size());
    for (const InspectedTensor& t : tensors) views.push_back(checkpoint.tensor(t.info->name));

    ProgressBar bar("stats");
    analysis::TensorStatsOptions options;
    options.threads = threads;
    options.progress = bar.callback();
    const SigintCancel sigint(options.cancel);
    const std::vector<analysis::TensorStats> stats = analysis::computeTensorStats(views, options);
    bar.finish(true);
    for (std::size_t i = 0; i < tensors.size(); ++i) tensors[i].stats = stats[i];
}

void runInspect(const InspectOptions& options) {
    if (!options.filter.empty()) compileFilter(options.filter);  // a bad pattern fails before any I/O
    const io::Checkpoint checkpoint = io::Checkpoint::open(options.path);

    InspectReport report;
    report.path = options.path;
    report.summary = checkpoint.summary();
    report.shardCount = checkpoint.gguf() ? 1 : checkpoint.shards().size();
    if (checkpoint.gguf()) report.gguf = inspectGguf(checkpoint);
    report.tensorCount = checkpoint.tensors().size();
    report.filter = options.filter;
    report.listTensors = options.tensors || options.stats || !options.filter.empty();
    if (report.listTensors) report.tensors = selectTensors(checkpoint, options.filter);
    if (options.stats) addStats(checkpoint, report.tensors, options.threads);
    formats::FormatInfo format = formats::detect(checkpoint);
    report.servingScales = formats::readServingScales(checkpoint);  // a bad scale is refused, naming the tensor
    report.parameters = formats::modelParameterCount(checkpoint, format);
    for (auto& linear : format.layers)
        if (linear.scheme != "dense") report.quantizedLinears.push_back(std::move(linear));
    report.listLayers = options.layers;
    // What would stop the other commands is said here, without stopping the inspection.
    if (!format.decodable)
        report.warnings.push_back("the quantized layers cannot be decoded (format " +
                                  std::string(formats::formatName(format.format)) + "): " + format.whyNot);
    for (auto& problem : formats::configDisagreements(checkpoint, format))
        report.warnings.push_back(std::move(problem));
    for (auto& warning : format.warnings) report.warnings.push_back(std::move(warning));

    // Rendered completely before anything is written, so that a failure leaves stdout empty. Bytes
    // that are not UTF-8 (a path given on the command line) are replaced rather than failing the dump.
    const std::string output =
        options.json ? renderJson(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
                     : renderText(report);
    for (const auto& w : report.warnings) std::cerr << "quantscope-cli: warning: " << sanitizeMessage(w) << '\n';
    std::cout << output << std::flush;
}

}  // namespace

void registerInspect(CLI::App& app) {
    auto options = std::make_shared<InspectOptions>();
    CLI::App* command = app.add_subcommand("inspect", "Summarise a checkpoint: architecture, size, dtypes, tensors");
    command->add_option("path", options->path, "A .safetensors or .gguf file, or a checkpoint folder (sharded or not)")
        ->required();
    command->add_flag("--json", options->json, "Print the report as JSON");
    command->add_flag("--tensors", options->tensors,
                      "List every tensor: name, dtype (a GGUF's ggml type), shape, bytes");
    command->add_flag("--layers", options->layers,
                      "List every quantized linear: bits, group size, act-order, symmetry");
    command->add_flag("--stats", options->stats,
                      "Add min/max/mean/std and NaN/Inf counts per tensor (reads all data; implies --tensors)");
    command->add_option("--filter", options->filter,
                        "Only tensors whose name matches this ECMAScript regex (implies --tensors)");
    command->add_option("--threads", options->threads, "Threads for --stats (0: all cores)")
        ->check(CLI::NonNegativeNumber);
    // The Hessian tab's figure: its own report, with the calibration it needs.
    CLI::Option* hessian = command
                               ->add_option("--hessian", options->hessian.layer,
                                            "Diagonal of the Hessian of each linear's inputs in decoder layer LAYER, "
                                            "after a short calibration")
                               ->check(CLI::NonNegativeNumber);
    hessian->excludes(command->get_option("--tensors"))->excludes(command->get_option("--layers"));
    hessian->excludes(command->get_option("--stats"))->excludes(command->get_option("--filter"));
    command
        ->add_option("--calib", options->hessian.calib,
                     "--hessian: calibration text (UTF-8 file or JSON list of strings)")
        ->needs(hessian);
    command->add_option("--samples", options->hessian.samples, "--hessian: calibration sequences")
        ->capture_default_str()
        ->check(CLI::PositiveNumber)
        ->needs(hessian);
    command->add_option("--seq-len", options->hessian.seqLen, "--hessian: tokens per sequence")
        ->capture_default_str()
        ->check(CLI::Range(2, 1 << 20))
        ->needs(hessian);
    command
        ->add_option("--device", options->hessian.device, "--hessian: where the forward passes run: cpu, cuda or auto")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
        ->needs(hessian);
    command->callback([options, hessian] {
        if (hessian->count() == 0) return runInspect(*options);
        options->hessian.path = options->path;
        options->hessian.json = options->json;
        runInspectHessian(options->hessian);
    });
}

}  // namespace qs::cli
