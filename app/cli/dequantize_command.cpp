#include "dequantize_command.h"

#include <iostream>
#include <memory>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/json_value.h"
#include "qs/model/gguf_tokenizer.h"
#include "qs/pipeline/dense_export.h"
#include "qs/pipeline/gguf_export.h"

#include "checkpoint_warnings.h"
#include "progress_bar.h"
#include "sigint_cancel.h"

namespace qs::cli {
namespace {

struct DequantizeOptions {
    std::string path;
    std::string out;
    std::string dtype = "bf16";
    std::string llama2cTokenizer;
    bool overwrite = false;
    bool allowNonFinite = false;
};

io::DType parseDtype(const std::string& text) {
    if (text == "bf16") return io::DType::BF16;
    if (text == "f16") return io::DType::F16;
    if (text == "f32") return io::DType::F32;
    throw Error("--dtype " + text + " is a GGUF type; a safetensors destination takes bf16, f16 or f32");
}

io::GgmlType ggmlTypeByNameOrThrow(const std::string& name) {
    const io::GgmlTypeTraits* t = io::ggmlTypeByName(name);
    if (t == nullptr) throw Error("--dtype " + name + " is not a ggml type");
    return t->type;
}

bool isGgufDestination(const std::string& out) { return std::filesystem::path(out).extension() == ".gguf"; }

// A .gguf destination: every matrix in the chosen ggml type, vectors in f32, the tokenizer inside.
std::filesystem::path writeGgufFile(const DequantizeOptions& o, const ProgressCallback& progress,
                                    const CancelToken& cancel) {
    pipeline::GgufExportOptions options;
    options.chooser = pipeline::uniformGgufType(ggmlTypeByNameOrThrow(o.dtype));
    options.overwrite = o.overwrite;
    options.allowNonFinite = o.allowNonFinite;
    const io::Checkpoint checkpoint = io::Checkpoint::open(o.path);
    if (!o.llama2cTokenizer.empty()) {
        const int vocab = static_cast<int>(
            io::jsonIntegerField(checkpoint.config(), "vocab_size", checkpoint.configSource().string(), {0, 1 << 24})
                .value_or(0));
        options.sentencePiece =
            pipeline::GgufSentencePieceVocabulary{model::readLlama2cTokenizer(o.llama2cTokenizer, vocab), 1, 2, true};
    }
    return pipeline::writeGguf(checkpoint, o.out, options, progress, cancel);
}

void runDequantize(const DequantizeOptions& o) {
    printCheckpointWarnings(io::Checkpoint::open(o.path));
    qs::CancelToken cancel;
    const SigintCancel sigint(cancel);
    ProgressBar bar("dequantize");
    std::filesystem::path written;
    if (isGgufDestination(o.out)) {
        written = writeGgufFile(o, bar.callback(), cancel);
    } else {
        if (!o.llama2cTokenizer.empty()) throw Error("--llama2c-tokenizer applies to a .gguf destination only");
        const pipeline::DenseExportRequest request{o.path, o.out, parseDtype(o.dtype), o.overwrite, o.allowNonFinite};
        written = pipeline::exportDense(request, bar.callback(), cancel);
    }
    bar.finish(true);
    std::cout << "wrote " << written.string() << '\n';
}

}  // namespace

void registerDequantize(CLI::App& app) {
    auto options = std::make_shared<DequantizeOptions>();
    CLI::App* cmd = app.add_subcommand("dequantize", "Write a checkpoint back as a dense one, or as a GGUF file");
    cmd->add_option("path", options->path, "Checkpoint: .safetensors or .gguf file, or folder")->required();
    cmd->add_option("--out", options->out, "Destination folder, or a .gguf file (must not exist unless --overwrite)")
        ->required();
    cmd->add_option("--dtype", options->dtype,
                    "Type of the decoded linears: bf16, f16, f32; a .gguf destination also takes q8_0")
        ->check(CLI::IsMember({"bf16", "f16", "f32", "q8_0"}))
        ->capture_default_str();
    cmd->add_option(
        "--llama2c-tokenizer", options->llama2cTokenizer,
        "llama2.c tokenizer.bin to store as the GGUF's SentencePiece tokenizer (for models without tokenizer.json)");
    cmd->add_flag("--overwrite", options->overwrite, "Replace the destination if it exists");
    cmd->add_flag("--allow-nonfinite", options->allowNonFinite,
                  "Use linears whose weights are NaN or Inf instead of refusing them");
    cmd->callback([options] { runDequantize(*options); });
}

}  // namespace qs::cli
