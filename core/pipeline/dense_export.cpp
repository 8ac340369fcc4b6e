#include "qs/pipeline/dense_export.h"

#include <algorithm>
#include <map>
#include <set>

#include "qs/architectures/registry.h"
#include "qs/error.h"
#include "qs/formats/config_check.h"
#include "qs/formats/detect.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/pipeline/model_checkpoint.h"

#include "export_source.h"

namespace qs::pipeline {

namespace {

std::string torchDtype(io::DType dtype) {
    switch (dtype) {
        case io::DType::BF16: return "bfloat16";
        case io::DType::F16: return "float16";
        case io::DType::F32: return "float32";
        default: throw Error("dense export writes bf16, f16 or f32, not " + std::string(io::dtypeName(dtype)));
    }
}

// The stacked expert tensors a codec stores quantized (gpt-oss: "model.layers.L.mlp.experts.gate_up_proj"
// with E experts), by prefix; the other quantized linears are ExportSource's.
std::map<std::string, int> stackedExperts(const formats::LinearReader& reader, const io::Checkpoint& checkpoint) {
    std::map<std::string, int> stacked;
    for (const auto& ref : reader.linears()) {
        if (ref.expert < 0 || reader.codecOf(ref).name() == "dense") continue;
        // transformers' GptOssExperts names; OpenAI's original "block.N.mlp.mlp1_weight" has no dense counterpart here
        if (!ref.prefix.starts_with("model.layers."))
            throw Error(checkpoint.root().string() + ": " + ref.prefix +
                        " stacks its experts in OpenAI's original naming; convert it with transformers first");
        stacked[ref.prefix] = std::max(stacked[ref.prefix], ref.expert + 1);
    }
    return stacked;
}

// The stacked expert tensor a tensor is part of ("" when none): "<prefix>_blocks" / "<prefix>_scales"
// (their "<prefix>_bias" stays a tensor of its own).
std::string stackedOwnerOf(const std::string& name, const std::map<std::string, int>& stacked) {
    for (const std::string_view suffix : {"_blocks", "_scales"})
        if (name.ends_with(suffix)) {
            const std::string prefix = name.substr(0, name.size() - suffix.size());
            if (stacked.contains(prefix)) return prefix;
        }
    return "";
}

// Stacked experts as transformers' GptOssExperts holds them in BF16: "<prefix>" [E, in, out], each
// expert the transpose of its decoded [out, in] weight (x @ W, not W x).
void addStackedExperts(io::CheckpointWriter& writer, const formats::LinearReader& reader, const std::string& prefix,
                       int experts, io::DType dtype, const CancelToken& cancel) {
    std::vector<float> stacked;
    std::int64_t in = 0, out = 0;
    for (int e = 0; e < experts; ++e) {
        cancel.throwIfCancelled();
        const MatrixF w = reader.decodeF32(prefix, e);
        out = w.rows();
        in = w.cols();
        if (stacked.empty()) stacked.resize(static_cast<std::size_t>(experts) * static_cast<std::size_t>(in * out));
        Eigen::Map<MatrixF>(stacked.data() + static_cast<std::size_t>(e) * static_cast<std::size_t>(in * out), in,
                            out) = w.transpose();
    }
    writer.addTensorF32(prefix, dtype, {experts, in, out}, stacked);
}

void report(const ProgressCallback& progress, std::size_t done, std::size_t total, const std::string& prefix) {
    if (!progress) return;
    Progress p;
    p.stage = "dequantize";
    p.step = static_cast<int>(done);
    p.steps = static_cast<int>(total);
    p.fraction = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
    p.message = prefix;
    progress(p);
}

}  // namespace

std::filesystem::path exportDense(const DenseExportRequest& request, const ProgressCallback& progress,
                                  const CancelToken& cancel) {
    const std::string dtypeText = torchDtype(request.dtype);
    const io::Checkpoint source = io::Checkpoint::open(request.source);
    // A gpt-oss GGUF reads back with each expert's gate, up and down apart (model::ModelConfig::fromCheckpoint);
    // transformers and vLLM load gpt-oss's experts only stacked, gate and up interleaved, which is not rebuilt here.
    if (source.gguf() != nullptr && architectures::stacksExperts(source.config().value("model_type", "")))
        throw Error(source.gguf()->path().string() +
                    ": a gpt-oss GGUF holds its experts' gate and up projections apart, and gpt-oss's "
                    "Hugging Face checkpoint needs them stacked and interleaved (gate_up_proj), which a "
                    "dense export does not rebuild; write a GGUF instead");
    if (const formats::FormatInfo format = formats::detect(source); !format.decodable)
        throw Error(source.root().string() + ": " + std::string(formats::formatName(format.format)) +
                    " cannot be decoded: " + format.whyNot);
    const ExportSource exported(source, request.dtype,
                                formats::DecodeOptions{.allowNonFinite = request.allowNonFinite});
    const formats::LinearReader& reader = exported.reader();
    // The config is copied into the export: one that disagrees with the tensors would describe
    // another model there too.
    formats::requireConfigMatchesTensors(source, reader.format());
    const std::map<std::string, int> stacked = stackedExperts(reader, source);
    // Dense linears are copied, not decoded; they are still weights of the exported model.
    requireFiniteDenseLinears(source, reader.format(), request.allowNonFinite);

    io::CheckpointWriter writer(
        request.destination,
        io::CheckpointWriterOptions{.overwrite = request.overwrite, .denseMlpBlock = source.denseMlpBlock()},
        exported.protectedPath(request.destination));
    std::set<std::string> written;
    const std::size_t total = exported.quantizedLinears().size() + stacked.size();
    for (const auto& t : source.tensors()) {
        cancel.throwIfCancelled();
        const std::string& name = t.info->name;
        // The engine's activation / KV-cache scales describe the quantized model, not a dense one.
        if (exported.leftOut(name)) continue;
        const auto view = source.tensor(name);
        const std::string owner = exported.quantizedOwner(name);
        if (const std::string experts = stackedOwnerOf(name, stacked); !experts.empty()) {
            if (written.insert(experts).second) {
                addStackedExperts(writer, reader, experts, stacked.at(experts), request.dtype, cancel);
                report(progress, written.size(), total, experts);
            }
        } else if (owner.empty() || name == owner + ".bias") {
            exported.copy(writer, view);
        } else if (written.insert(owner).second) {
            exported.writeDecoded(writer, owner);
            report(progress, written.size(), total, owner);
        }
    }
    nlohmann::json config = source.config().is_object() ? source.config() : nlohmann::json::object();
    config.erase("quantization_config");
    config["torch_dtype"] = dtypeText;
    writer.setConfig(std::move(config));
    exported.addAuxiliaryFiles(writer);
    return writer.finish();
}

}  // namespace qs::pipeline
