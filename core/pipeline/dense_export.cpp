#include "qs/pipeline/dense_export.h"

#include <map>
#include <set>

#include "qs/error.h"
#include "qs/formats/config_check.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"
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

// The quantized linears (dense ones are copied like any other tensor).
std::set<std::string> quantizedPrefixes(const formats::LinearReader& reader, const io::Checkpoint& checkpoint) {
    std::set<std::string> prefixes;
    for (const auto& ref : reader.linears()) {
        if (reader.codecOf(ref).name() == "dense") continue;
        if (ref.expert >= 0)
            throw Error(checkpoint.root().string() + ": " + ref.prefix +
                        " stacks its experts in one tensor; dense export of stacked experts is not supported");
        prefixes.insert(ref.prefix);
    }
    return prefixes;
}

// The quantized linear a tensor is part of ("" when none): its name is "<prefix>.<part...>".
std::string ownerOf(const std::string& name, const std::set<std::string>& prefixes) {
    for (auto dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
        if (prefixes.contains(name.substr(0, dot))) return name.substr(0, dot);
    return "";
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

    io::CheckpointWriter writer(request.destination, io::CheckpointWriterOptions{.overwrite = request.overwrite}, source.root());
    std::set<std::string> written;
    for (const auto& t : source.tensors()) {
        cancel.throwIfCancelled();
        const std::string& name = t.info->name;
        const std::string owner = ownerOf(name, prefixes);
        const auto view = source.tensor(name);
        if (owner.empty() || name == owner + ".bias") {
            writer.addTensor(name, view.dtype(), view.shape(), view.bytes());
        } else if (written.insert(owner).second) {
            const MatrixF w = reader.decodeF32(owner);
            writer.addTensorF32(owner + ".weight", request.dtype, {w.rows(), w.cols()}, {w.data(), static_cast<std::size_t>(w.size())});
            report(progress, written.size(), prefixes.size(), owner);
        }
    }
    nlohmann::json config = source.config().is_object() ? source.config() : nlohmann::json::object();
    config.erase("quantization_config");
    config["torch_dtype"] = dtypeText;
    writer.setConfig(std::move(config));
    writer.copyAuxiliaryFiles(source.root());
    return writer.finish();
}

}  // namespace qs::pipeline
