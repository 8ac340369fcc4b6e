#include "qs/pipeline/dense_export.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "qs/architectures/registry.h"
#include "qs/error.h"
#include "qs/formats/config_check.h"
#include "qs/formats/linear_reader.h"
#include "qs/formats/serving_quantization.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/io/gguf_names.h"
#include "qs/model/gguf_tokenizer.h"
#include "qs/pipeline/model_checkpoint.h"

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

// The quantized linears (dense ones are copied like any other tensor), and of them the stacked
// expert tensors (gpt-oss: "model.layers.L.mlp.experts.gate_up_proj" with E experts).
struct QuantizedPrefixes {
    std::set<std::string> linears;
    std::map<std::string, int> stacked;  // prefix -> experts
};

QuantizedPrefixes quantizedPrefixes(const formats::LinearReader& reader, const io::Checkpoint& checkpoint) {
    QuantizedPrefixes p;
    for (const auto& ref : reader.linears()) {
        if (reader.codecOf(ref).name() == "dense") continue;
        if (ref.expert < 0) {
            p.linears.insert(ref.prefix);
            continue;
        }
        // transformers' GptOssExperts names; OpenAI's original "block.N.mlp.mlp1_weight" has no dense counterpart here
        if (!ref.prefix.starts_with("model.layers."))
            throw Error(checkpoint.root().string() + ": " + ref.prefix +
                        " stacks its experts in OpenAI's original naming; convert it with transformers first");
        p.stacked[ref.prefix] = std::max(p.stacked[ref.prefix], ref.expert + 1);
    }
    return p;
}

// The quantized linear a tensor is part of ("" when none): its name is "<prefix>.<part...>", or for
// stacked experts "<prefix>_blocks" / "<prefix>_scales" (their "<prefix>_bias" stays a tensor of its own).
std::string ownerOf(const std::string& name, const QuantizedPrefixes& prefixes) {
    for (auto dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
        if (prefixes.linears.contains(name.substr(0, dot))) return name.substr(0, dot);
    for (const std::string_view suffix : {"_blocks", "_scales"})
        if (name.ends_with(suffix)) {
            const std::string prefix = name.substr(0, name.size() - suffix.size());
            if (prefixes.stacked.contains(prefix)) return prefix;
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

// A GGUF tensor that is not a quantized linear's weight (embedding, norm, bias): decoded and stored
// in its own float type when it has one (exact), else in the export's dtype. Tensors llama.cpp
// derives (rope_freqs.weight, which config.json's rope_scaling states) have no Hugging Face name
// and stay behind.
void addGgufTensor(io::CheckpointWriter& writer, const io::TensorView& view, io::DType dtype) {
    if (!io::ggufNameOfHfTensor(view.name())) return;
    const io::GgmlType type = *view.info().ggmlType;
    const io::DType stored = type == io::GgmlType::F32    ? io::DType::F32
                             : type == io::GgmlType::F16  ? io::DType::F16
                             : type == io::GgmlType::BF16 ? io::DType::BF16
                                                          : dtype;
    const std::vector<float> values = view.toF32();
    writer.addTensorF32(view.name(), stored, view.shape(), values);
}

// What the writer must never write into or replace. A safetensors checkpoint is its folder; a GGUF
// is one file, so a folder beside it is fine, but not one that would hold (and so replace) it.
std::optional<std::filesystem::path> protectedSource(const io::Checkpoint& source, const DenseExportRequest& request) {
    const io::GgufFile* gguf = source.gguf();
    if (gguf == nullptr) return source.root();
    const auto file = std::filesystem::weakly_canonical(std::filesystem::absolute(gguf->path()));
    const auto destination = std::filesystem::weakly_canonical(std::filesystem::absolute(request.destination));
    const auto [d, f] = std::mismatch(destination.begin(), destination.end(), file.begin(), file.end());
    if (d == destination.end())
        throw Error(request.destination.string() + ": holds the source " + gguf->path().string() +
                    "; write the output elsewhere so that the source is never modified");
    return std::nullopt;
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
    const formats::LinearReader reader(source, formats::DecodeOptions{.allowNonFinite = request.allowNonFinite});
    if (!reader.format().decodable)
        throw Error(source.root().string() + ": " + std::string(formats::formatName(reader.format().format)) +
                    " cannot be decoded: " + reader.format().whyNot);
    // The config is copied into the export: one that disagrees with the tensors would describe
    // another model there too.
    formats::requireConfigMatchesTensors(source, reader.format());
    const auto prefixes = quantizedPrefixes(reader, source);
    // Dense linears are copied, not decoded; they are still weights of the exported model.
    requireFiniteDenseLinears(source, reader.format(), request.allowNonFinite);

    io::CheckpointWriter writer(request.destination, io::CheckpointWriterOptions{.overwrite = request.overwrite},
                                protectedSource(source, request));
    std::set<std::string> written;
    for (const auto& t : source.tensors()) {
        cancel.throwIfCancelled();
        const std::string& name = t.info->name;
        const std::string owner = ownerOf(name, prefixes);
        // The engine's activation / KV-cache scales describe the quantized model, not a dense one.
        if (formats::isServingScale(name)) continue;
        const auto view = source.tensor(name);
        if (source.gguf() && (owner.empty() || name == owner + ".bias")) {
            addGgufTensor(writer, view, request.dtype);
        } else if (owner.empty() || name == owner + ".bias") {
            writer.addTensor(name, view.dtype(), view.shape(), view.bytes());
        } else if (const auto stacked = prefixes.stacked.find(owner); stacked != prefixes.stacked.end()) {
            if (written.insert(owner).second) {
                addStackedExperts(writer, reader, owner, stacked->second, request.dtype, cancel);
                report(progress, written.size(), prefixes.linears.size() + prefixes.stacked.size(), owner);
            }
        } else if (written.insert(owner).second) {
            const MatrixF w = reader.decodeF32(owner);
            writer.addTensorF32(owner + ".weight", request.dtype, {w.rows(), w.cols()},
                                {w.data(), static_cast<std::size_t>(w.size())});
            report(progress, written.size(), prefixes.linears.size() + prefixes.stacked.size(), owner);
        }
    }
    nlohmann::json config = source.config().is_object() ? source.config() : nlohmann::json::object();
    config.erase("quantization_config");
    config["torch_dtype"] = dtypeText;
    writer.setConfig(std::move(config));
    if (const io::GgufFile* gguf = source.gguf()) {
        // The GGUF carries its own tokenizer; files that happen to lie beside it are not the model's.
        const model::TokenizerJsonFiles tokenizer =
            model::tokenizerJsonFromGguf(gguf->metadata(), gguf->path().string());
        writer.addJsonFile("tokenizer.json", tokenizer.tokenizer);
        writer.addJsonFile("tokenizer_config.json", tokenizer.config);
    } else {
        writer.copyAuxiliaryFiles(source.root());
    }
    return writer.finish();
}

}  // namespace qs::pipeline
