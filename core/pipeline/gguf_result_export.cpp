#include "qs/pipeline/gguf_result_export.h"

#include "gguf_method.h"
#include "qs/error.h"
#include "qs/io/checkpoint_fingerprint.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/export_check.h"
#include "qs/pipeline/gguf_type_mix.h"

namespace qs::pipeline {

std::filesystem::path writeGgufResult(const io::Checkpoint& source, const MethodResult& result,
                                      const std::filesystem::path& destination, GgufExportOptions options,
                                      const ProgressCallback& progress, const CancelToken& cancel) {
    if (!result.method.gguf()) throw Error(destination.string() + ": " + result.method.label() + " is not a GGUF method");
    if (!result.error.empty()) throw Error(destination.string() + ": " + result.method.label() + " failed: " + result.error);
    // As exportCheckpoint: the bytes must come from this checkpoint, not another of the same shapes.
    if (auto why = sourceMismatch(result, io::fingerprintOf(source)); !why.empty()) throw Error("cannot export: " + why);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(source);
    if (static_cast<int>(result.layers.size()) != config.numLayers)
        throw Error(destination.string() + ": the result has " + std::to_string(result.layers.size()) + " layers, " +
                    source.root().string() + " " + std::to_string(config.numLayers));
    std::uint32_t withImportance = 0;
    for (std::size_t layer = 0; layer < result.layers.size(); ++layer)
        for (const auto& [module, q] : result.layers[layer]) {
            options.encodedLinears[config.layerPrefix(static_cast<int>(layer)) + module] = q;   // a VLM: its text tower's names
            withImportance += q->inputCount > 0 ? 1 : 0;
        }
    // The Job chose the linears' types with importance when it had calibration; the same rules then.
    options.chooser = ggufMethodChooser(result.method, config, withImportance > 0);
    options.fileType = result.method.ggufFileType;
    if (withImportance > 0) options.extraMetadata.set("quantize.imatrix.entries_count", io::GgufValue::u32(withImportance));
    return writeGguf(source, destination, options, progress, cancel);
}

}  // namespace qs::pipeline
