#include "qs/pipeline/gguf_imatrix.h"

#include <cctype>
#include <map>
#include <span>

#include "qs/error.h"
#include "qs/io/gguf_names.h"
#include "qs/io/gguf_writer.h"

namespace qs::pipeline {

namespace {

// One imatrix entry: per matrix it covers (one, or an expert each for a stacked tensor), Σx² over the
// `cols` inputs and the number of tokens. llama-imatrix writes "<name>.in_sum2" [matrices, cols] and
// "<name>.counts" [matrices, 1].
struct Entry {
    std::int64_t cols = 0;
    std::vector<float> sums;
    std::vector<float> counts;
};

// Adds matrix `index` of `matrices` to the entry (an expert no calibration token reached: zeros, which
// llama-quantize reads as no weighting).
void addTo(Entry& entry, int index, int matrices, const quant::QuantizedLinear& q, const std::string& name) {
    if (entry.sums.empty()) {
        entry.cols = q.cols;
        entry.sums.assign(static_cast<std::size_t>(matrices * q.cols), 0.0f);
        entry.counts.assign(static_cast<std::size_t>(matrices), 0.0f);
    }
    if (q.cols != entry.cols) throw Error(name + ": its experts read inputs of different widths");
    if (q.inputSumSquares.empty() || q.inputCount <= 0) return;
    std::copy(q.inputSumSquares.begin(), q.inputSumSquares.end(),
              entry.sums.begin() + static_cast<std::ptrdiff_t>(index * q.cols));
    entry.counts[static_cast<std::size_t>(index)] = static_cast<float>(q.inputCount);
}

// The GGUF names of the stacked tensors that hold expert linear `linear` ("w1", "gate_up_proj"):
// llama.cpp's ffn_{gate,up,down}_exps; gpt-oss's gate_up_proj feeds both gate and up.
std::vector<std::string> stackedNames(const model::MoeNames& names, const std::string& linear, int layer) {
    const std::string blk = "blk." + std::to_string(layer) + ".";
    if (linear == names.down) return {blk + "ffn_down_exps.weight"};
    if (linear == names.up) return {blk + "ffn_up_exps.weight"};
    if (names.fusedGateUp()) return {blk + "ffn_gate_exps.weight", blk + "ffn_up_exps.weight"};
    return {blk + "ffn_gate_exps.weight"};
}

}  // namespace

ImatrixPlace imatrixPlaceOf(const model::ModelConfig& config, int layer, std::string_view module) {
    const model::MoeNames& names = config.moe.names;
    const std::string experts = names.experts();
    const bool expert = config.isMoe() && module.starts_with(experts) && module.size() > experts.size() &&
                        std::isdigit(static_cast<unsigned char>(module[experts.size()]));
    if (expert) {  // "<experts>N.<linear>" (experts stacked in one tensor name no expert: named as stored)
        const std::string rest(module.substr(experts.size()));
        const int index = std::stoi(rest.substr(0, rest.find('.')));
        return {stackedNames(names, rest.substr(rest.find('.') + 1), layer), index, config.moe.numExperts};
    }
    // llama-imatrix names entries as llama.cpp names the tensors (blk.N.attn_q.weight), whatever the
    // checkpoint's prefix (a VLM's model.language_model.): reached through Llama's spelling.
    const std::string hf = "model.layers." + std::to_string(layer) + "." + std::string(module) + ".weight";
    return {{io::ggufNameOfHfTensor(hf).value_or(hf)}, 0, 1};
}

std::filesystem::path writeImatrix(const MethodResult& result, const model::ModelConfig& config,
                                   const std::filesystem::path& destination, const ImatrixInfo& info, bool overwrite) {
    // llama-imatrix stores its entries sorted by name.
    std::map<std::string, Entry> entries;
    const auto& layers = linearHeaders(result);  // the importance is in the headers, also of a result on disk
    for (std::size_t layer = 0; layer < layers.size(); ++layer)
        for (const auto& [module, q] : layers[layer]) {
            const ImatrixPlace place = imatrixPlaceOf(config, static_cast<int>(layer), module);
            if (place.rows == 1 && (q->inputSumSquares.empty() || q->inputCount <= 0)) continue;
            for (const std::string& name : place.names) addTo(entries[name], place.row, place.rows, *q, name);
        }
    std::erase_if(
        entries, [](const auto& e) { return std::ranges::all_of(e.second.counts, [](float c) { return c == 0.0f; }); });
    if (entries.empty())
        throw Error(destination.string() + ": " + result.method.label() +
                    " holds no calibration statistics to write as an imatrix (a GGUF method quantized with calibration "
                    "text has them)");
    io::GgufWriter writer(destination, io::GgufWriterOptions{.overwrite = overwrite});
    writer.set("general.type", io::GgufValue::string("imatrix"));
    writer.set("imatrix.datasets", io::GgufValue::strings(info.datasets));
    writer.set("imatrix.chunk_count", io::GgufValue::u32(info.chunkCount));
    writer.set("imatrix.chunk_size", io::GgufValue::u32(info.chunkSize));
    for (const auto& [name, e] : entries) {
        const auto matrices = static_cast<std::int64_t>(e.counts.size());
        writer.addTensor(name + ".in_sum2", io::GgmlType::F32, {matrices, e.cols},
                         std::as_bytes(std::span<const float>(e.sums)));
        writer.addTensor(name + ".counts", io::GgmlType::F32, {matrices, 1},
                         std::as_bytes(std::span<const float>(e.counts)));
    }
    return writer.finish();
}

}  // namespace qs::pipeline
