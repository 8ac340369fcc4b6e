#include "dequantize_command.h"

#include <iostream>
#include <memory>

#include "progress_bar.h"
#include "qs/pipeline/dense_export.h"
#include "sigint_cancel.h"

namespace qs::cli {
namespace {

struct DequantizeOptions {
    std::string path;
    std::string out;
    std::string dtype = "bf16";
    bool overwrite = false;
    bool allowNonFinite = false;
};

io::DType parseDtype(const std::string& text) {
    if (text == "bf16") return io::DType::BF16;
    if (text == "f16") return io::DType::F16;
    return io::DType::F32;   // CLI11 has already checked it is one of the three
}

void runDequantize(const DequantizeOptions& o) {
    pipeline::DenseExportRequest request{o.path, o.out, parseDtype(o.dtype), o.overwrite, o.allowNonFinite};
    qs::CancelToken cancel;
    const SigintCancel sigint(cancel);
    ProgressBar bar("dequantize");
    const auto written = pipeline::exportDense(request, bar.callback(), cancel);
    bar.finish(true);
    std::cout << "wrote " << written.string() << '\n';
}

}  // namespace

void registerDequantize(CLI::App& app) {
    auto options = std::make_shared<DequantizeOptions>();
    CLI::App* cmd = app.add_subcommand("dequantize", "Write a quantized checkpoint back as a dense one");
    cmd->add_option("path", options->path, "Checkpoint: .safetensors file or folder")->required();
    cmd->add_option("--out", options->out, "Destination folder (must not exist unless --overwrite)")->required();
    cmd->add_option("--dtype", options->dtype, "dtype of the decoded linears")
        ->check(CLI::IsMember({"bf16", "f16", "f32"}))
        ->capture_default_str();
    cmd->add_flag("--overwrite", options->overwrite, "Replace the destination if it exists");
    cmd->add_flag("--allow-nonfinite", options->allowNonFinite, "Use linears whose weights are NaN or Inf instead of refusing them");
    cmd->callback([options] { runDequantize(*options); });
}

}  // namespace qs::cli
