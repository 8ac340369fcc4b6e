#include "qs/pipeline/gguf_imatrix.h"

#include <map>
#include <span>

#include "qs/error.h"
#include "qs/io/gguf_names.h"
#include "qs/io/gguf_writer.h"

namespace qs::pipeline {

std::filesystem::path writeImatrix(const MethodResult& result, const std::filesystem::path& destination,
                                   const ImatrixInfo& info, bool overwrite) {
    // llama-imatrix stores its entries sorted by name.
    std::map<std::string, const quant::QuantizedLinear*> entries;
    const auto& layers = linearHeaders(result);   // the importance is in the headers, also of a result on disk
    for (std::size_t layer = 0; layer < layers.size(); ++layer)
        for (const auto& [module, q] : layers[layer]) {
            if (q->inputSumSquares.empty() || q->inputCount <= 0) continue;
            // llama-imatrix names entries as llama.cpp names the tensors (blk.N.attn_q.weight), whatever the
            // checkpoint's prefix (a VLM's model.language_model.): reached through Llama's spelling.
            const std::string hf = "model.layers." + std::to_string(layer) + "." + module + ".weight";
            entries.emplace(io::ggufNameOfHfTensor(hf).value_or(hf), q.get());
        }
    if (entries.empty())
        throw Error(destination.string() + ": " + result.method.label() +
                    " holds no calibration statistics to write as an imatrix (a GGUF method quantized with calibration text has them)");
    io::GgufWriter writer(destination, io::GgufWriterOptions{.overwrite = overwrite});
    writer.set("general.type", io::GgufValue::string("imatrix"));
    writer.set("imatrix.datasets", io::GgufValue::strings(info.datasets));
    writer.set("imatrix.chunk_count", io::GgufValue::u32(info.chunkCount));
    writer.set("imatrix.chunk_size", io::GgufValue::u32(info.chunkSize));
    for (const auto& [name, q] : entries) {
        const std::vector<float> count = {static_cast<float>(q->inputCount)};
        writer.addTensor(name + ".in_sum2", io::GgmlType::F32, {1, q->cols}, std::as_bytes(std::span<const float>(q->inputSumSquares)));
        writer.addTensor(name + ".counts", io::GgmlType::F32, {1, 1}, std::as_bytes(std::span<const float>(count)));
    }
    return writer.finish();
}

}  // namespace qs::pipeline
