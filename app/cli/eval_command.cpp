#include "eval_command.h"

#include <fstream>
#include <iostream>
#include <memory>

#include "qs/analysis/kl_metrics.h"
#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/pipeline/checkpoint_eval.h"
#include "qs/pipeline/checkpoint_eval_report.h"
#include "qs/pipeline/run_text.h"

#include "checkpoint_warnings.h"
#include "progress_bar.h"
#include "sigint_cancel.h"

namespace qs::cli {
namespace {

struct EvalOptions {
    std::string original;
    std::string quantized;
    std::string eval;
    int samples = pipeline::kCheckpointEvalSamples;
    int seqLen = pipeline::kCheckpointEvalSeqLen;
    std::string json;
    bool allowNonFinite = false;
};

void runEval(const EvalOptions& o) {
    const io::Checkpoint original = io::Checkpoint::open(o.original);
    const io::Checkpoint quantized = io::Checkpoint::open(o.quantized);
    printCheckpointWarnings(original);
    printCheckpointWarnings(quantized);
    // As compare: the original's own eval.txt (the demo ships one), else the bundled text.
    const std::filesystem::path text = pipeline::resolveRunText(pipeline::TextRole::Evaluation, o.eval, original);
    pipeline::CheckpointEvalPlan plan;
    plan.original = o.original;
    plan.quantized = o.quantized;
    plan.allowNonFinite = o.allowNonFinite;
    plan.evaluation = pipeline::sharedTokenWindows(original, quantized, pipeline::loadTexts(text), o.samples, o.seqLen,
                                                   text.string());

    qs::CancelToken cancel;
    const SigintCancel sigint(cancel);
    ProgressBar bar("eval");
    const pipeline::CheckpointEvalResult result = pipeline::evaluateCheckpoints(plan, bar.callback(), cancel);
    bar.finish(true);
    std::cout << "original:  " << o.original << " (" << result.originalFormat << ")\n"
              << "quantized: " << o.quantized << " (" << result.quantizedFormat << ")\n"
              << "evaluation: " << plan.evaluation.size() << " x " << plan.evaluation.front().size() << " tokens of "
              << text.string() << ", " << result.kl.count << " positions scored\n\n"
              << analysis::formatKlReport(result.kl);
    if (!o.json.empty()) {
        std::ofstream out(o.json);
        if (!out) throw Error(o.json + ": cannot write the JSON report");
        out << pipeline::checkpointEvalJson(o.original, o.quantized, result).dump(2) << '\n';
    }
}

}  // namespace

void registerEval(CLI::App& app) {
    auto options = std::make_shared<EvalOptions>();
    CLI::App* cmd =
        app.add_subcommand("eval", "KL divergence of a quantized checkpoint from its original on held-out text");
    cmd->add_option("original", options->original, "The original checkpoint: .safetensors file or folder")->required();
    cmd->add_option("quantized", options->quantized,
                    "The quantized checkpoint (any readable format, a .gguf file included)")
        ->required();
    cmd->add_option("--eval", options->eval, "Held-out text (UTF-8 file or JSON list of strings)");
    cmd->add_option("--samples", options->samples, "Evaluation sequences")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--seq-len", options->seqLen, "Tokens per sequence")
        ->capture_default_str()
        ->check(CLI::Range(2, 1 << 20));
    cmd->add_option("--json", options->json, "Write the report as JSON to this file");
    cmd->add_flag("--allow-nonfinite", options->allowNonFinite,
                  "Use linears whose weights are NaN or Inf instead of refusing them");
    cmd->callback([options] { runEval(*options); });
}

}  // namespace qs::cli
