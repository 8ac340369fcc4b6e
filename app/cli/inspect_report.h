#pragma once
// What `inspect` found, and its two renderings: aligned text for people and JSON for scripts.
// Both carry the same fields, so a script never has to parse the text.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/analysis/tensor_stats.h"
#include "qs/formats/linear_codec.h"
#include "qs/formats/serving_quantization.h"
#include "qs/io/checkpoint.h"
#include "qs/io/gguf_bits_per_weight.h"

namespace qs::cli {

struct InspectedTensor {
    const io::TensorInfo* info = nullptr;
    std::size_t shard = 0;
    std::optional<analysis::TensorStats> stats;  // with --stats
};

// The tensors of one element type: how many, their weights and bytes (io::StoredBits).
using TypeCount = io::StoredBits;

// What a GGUF file adds: its container header, metadata and ggml types.
struct GgufInspection {
    std::uint32_t version = 0;
    std::uint32_t alignment = 0;
    std::string fileType;                                       // llama.cpp's name of general.file_type, "" when absent
    std::vector<std::pair<std::string, std::string>> metadata;  // key -> value (arrays as "[type x n]")
    nlohmann::json metadataJson;                                // scalars as values, arrays as {type, length}
    std::vector<TypeCount> types;                               // by type name
    // io::ggufBitsPerWeight: the decoder's linear weights (what `quantize` and the app call bits per
    // weight: the bits stored per weight of the quantized linears); `types` covers every tensor
    // (embeddings, output, norms).
    TypeCount decoderLinears;
    TypeCount allTensors;
};

struct InspectReport {
    std::filesystem::path path;
    io::CheckpointSummary summary;
    // The model's parameters (formats::modelParameterCount): a quantized linear counts out x in, where
    // summary.parameterCount counts stored elements (eight int4 weights to a GPTQ int32).
    std::int64_t parameters = 0;
    std::size_t shardCount = 0;
    std::size_t tensorCount = 0;
    std::string filter;        // "" when every tensor is listed
    bool listTensors = false;  // --tensors, --stats or --filter
    std::vector<InspectedTensor> tensors;
    std::vector<formats::LayerQuantInfo> quantizedLinears;  // every linear stored quantized
    bool listLayers = false;                                // --layers: one line per quantized linear
    std::optional<GgufInspection> gguf;                     // set for a GGUF file
    std::vector<std::string> warnings;                 // what the other commands would refuse (config vs tensors, ...)
    std::vector<formats::ServingScale> servingScales;  // input_scale, input_global_scale, k_scale, v_scale
};

// The GGUF part of the report, from the checkpoint's GGUF file and its (renamed) tensors.
GgufInspection inspectGguf(const io::Checkpoint& checkpoint);

std::string renderText(const InspectReport& report);
nlohmann::json renderJson(const InspectReport& report);

}  // namespace qs::cli
