#include "qs/pipeline/gguf_result_export.h"

#include "qs/error.h"
#include "qs/io/checkpoint_fingerprint.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/export_check.h"
#include "qs/pipeline/gguf_type_mix.h"
#include "qs/pipeline/mixed_methods.h"
#include "qs/quant/concatenate_rows.h"

#include "export_rotation.h"
#include "fused_export.h"
#include "gguf_method.h"

namespace qs::pipeline {
namespace {

// Phi-3's GGUF stores q/k/v as attn_qkv and gate/up as ffn_up: their parts' blocks, row after row.
void fuseEncodedLinears(const model::ModelConfig& config, GgufExportOptions& options) {
    for (int layer = 0; layer < config.numLayers; ++layer)
        for (const model::FusedProjection& f : config.fusedProjections()) {
            const std::string p = config.layerPrefix(layer);
            std::vector<const quant::QuantizedLinear*> parts;
            for (const auto& part : f.parts)
                if (const auto it = options.encodedLinears.find(p + part.first); it != options.encodedLinears.end())
                    parts.push_back(it->second.get());
            if (parts.empty()) continue;
            if (parts.size() != f.parts.size())
                throw Error(
                    p + f.fused +
                    ": some of its parts are quantized and some not, and the GGUF file stores them as one tensor");
            options.encodedLinears[p + f.fused] =
                std::make_shared<const quant::QuantizedLinear>(quant::concatenateRows(parts, p + f.fused));
        }
}

// The checks both results share, then the Job's linears into `options` as they are; returns how many
// carry importance (the Job had calibration).
std::uint32_t takeEncodedLinears(const io::Checkpoint& source, const MethodResult& result,
                                 const std::filesystem::path& destination, GgufExportOptions& options) {
    if (!result.error.empty()) throw Error(destination.string() + ": " + result.label() + " failed: " + result.error);
    // As exportCheckpoint: the bytes must come from this checkpoint, not another of the same shapes.
    if (auto why = sourceMismatch(result, io::fingerprintOf(source)); !why.empty())
        throw Error("cannot export: " + why);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(source);
    const auto& layers = linearHeaders(result);  // a result on disk: its blocks are read as the writer goes
    if (static_cast<int>(layers.size()) != config.numLayers)
        throw Error(destination.string() + ": the result has " + std::to_string(layers.size()) + " layers, " +
                    source.root().string() + " " + std::to_string(config.numLayers));
    if (result.stored) {  // a fused projection (Phi-3) is stacked from its parts' blocks as they are read
        auto stored = std::make_shared<StoredLinearReader>(
            result.stored, [&config](std::size_t i) { return config.layerPrefix(static_cast<int>(i)); });
        options.completeLinear = [reader = std::make_shared<FusedLinearReader>(
                                      config.arch, std::map<std::string, std::vector<float>>{},
                                      [stored](const std::string& p) { return stored->complete(p); })](
                                     const std::string& prefix) { return reader->complete(prefix); };
    }
    std::uint32_t withImportance = 0;
    for (std::size_t layer = 0; layer < layers.size(); ++layer)
        for (const auto& [module, q] : layers[layer]) {
            options.encodedLinears[config.layerPrefix(static_cast<int>(layer)) + module] =
                q;  // a VLM: its text tower's names
            withImportance += q->inputCount > 0 ? 1 : 0;
        }
    if (withImportance > 0)
        options.extraMetadata.set("quantize.imatrix.entries_count", io::GgufValue::u32(withImportance));
    fuseEncodedLinears(config, options);
    return withImportance;
}

// A --rotate result's file: the tensors the writer leaves dense or encodes from the source (token_embd, output,
// the norms, biases, routers) as the rotated model holds them, and output.weight even for a tied source.
void foldRotation(const io::Checkpoint& source, const MethodResult& result, GgufExportOptions& options) {
    if (!result.rotationSeed) return;
    auto rotation = std::make_shared<const ExportRotation>(source, *result.rotationSeed);
    options.replacedValues = [rotation](const std::string& name) { return rotation->valuesOf(name); };
    options.untieLmHead = true;
}

// The method a mix gave `module` of `layer`, as its module log names it.
std::string methodOfModule(const MethodResult& result, int layer, const std::string& module) {
    for (const auto& log : result.modules)
        if (log.layer == layer && log.module == module) return log.method;
    return result.method.name;
}

}  // namespace

std::filesystem::path writeGgufResult(const io::Checkpoint& source, const MethodResult& result,
                                      const std::filesystem::path& destination, GgufExportOptions options,
                                      const ProgressCallback& progress, const CancelToken& cancel) {
    if (!result.method.ggufFileMix() || result.mixed)
        throw Error(destination.string() + ": " + result.label() +
                    " is not a GGUF method (a mix of ggml types: writeGgufMixResult)");
    const std::uint32_t withImportance = takeEncodedLinears(source, result, destination, options);
    foldRotation(source, result, options);
    // The Job chose the linears' types with importance when it had calibration; the same rules then.
    options.chooser = ggufMethodChooser(result.method, model::ModelConfig::fromCheckpoint(source), withImportance > 0);
    options.fileType = result.method.ggufFileType;
    return writeGguf(source, destination, options, progress, cancel);
}

std::filesystem::path writeGgufMixResult(const io::Checkpoint& source, const MethodResult& result,
                                         const std::filesystem::path& destination, GgufExportOptions options,
                                         const ProgressCallback& progress, const CancelToken& cancel) {
    if (!result.mixed)
        throw Error(destination.string() + ": " + result.label() + " is not a mix of methods (writeGgufResult)");
    for (std::size_t layer = 0; layer < linearHeaders(result).size(); ++layer)
        for (const auto& [module, q] : linearHeaders(result)[layer])
            if (q->codeKind != quant::CodeKind::GgmlBlocks)
                throw Error(destination.string() + ": " + moduleName(static_cast<int>(layer), module) + " is " +
                            methodOfModule(result, static_cast<int>(layer), module) +
                            ", which a GGUF file cannot hold: a mix written as GGUF takes ggml types (q3_K, q4_K, "
                            "q5_K, q6_K, q8_0, ...)");
    (void)takeEncodedLinears(source, result, destination, options);
    foldRotation(source, result, options);
    // The linears the mix left dense, token_embd and output: F16, as the F16 file type writes them
    // (a mix quantizes decoder linears only); vectors F32. general.file_type: the commonest type.
    options.chooser = uniformGgufType(io::GgmlType::F16);
    options.fileType.reset();
    return writeGguf(source, destination, options, progress, cancel);
}

std::uint64_t measureGgufResult(const io::Checkpoint& source, const MethodResult& result, GgufExportOptions options) {
    std::uint64_t bytes = 0;
    options.measuredBytes = &bytes;
    const std::filesystem::path name = "the GGUF export";
    if (result.mixed)
        writeGgufMixResult(source, result, name, std::move(options), {}, {});
    else
        writeGgufResult(source, result, name, std::move(options), {}, {});
    return bytes;
}

}  // namespace qs::pipeline
