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
#include "qs/io/checkpoint.h"

namespace qs::cli {

struct InspectedTensor {
    const io::TensorInfo* info = nullptr;
    std::size_t shard = 0;
    std::optional<analysis::TensorStats> stats;   // with --stats
};

struct InspectReport {
    std::filesystem::path path;
    io::CheckpointSummary summary;
    std::size_t shardCount = 0;
    std::size_t tensorCount = 0;
    std::string filter;                  // "" when every tensor is listed
    bool listTensors = false;            // --tensors, --stats or --filter
    std::vector<InspectedTensor> tensors;
    std::vector<formats::LayerQuantInfo> quantizedLinears;   // every linear stored quantized
    bool listLayers = false;             // --layers: one line per quantized linear
    std::vector<std::string> warnings;   // what the other commands would refuse (config vs tensors, ...)
};

std::string renderText(const InspectReport& report);
nlohmann::json renderJson(const InspectReport& report);

}  // namespace qs::cli
