#pragma once
// StoredLayers: a method's finished layers kept in the Job's work folder instead of in RAM
// (JobPlan::resultsOnDisk), so that a result's memory does not grow with the model's depth. In memory
// stay only each linear's header and its small parts (scales, zeros, g_idx, measurements: everything
// but the per-weight codes and ggml blocks); the complete linears are read back one layer at a time
// by whoever needs them (the exporters). The folder must outlive the result (the CLI removes it after
// the export).
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "qs/pipeline/layer_quantizer.h"

namespace qs::pipeline {

// q without its per-weight parts (codes, ggml blocks): what a StoredLayers keeps of it in memory.
quant::QuantizedLinear linearHeader(const quant::QuantizedLinear& q);

class StoredLayers {
public:
    // Layer i's linears are the work folder's record of layer i under keys "<keyPrefix><module>";
    // `headers` holds linearHeader() of each, one map per layer.
    StoredLayers(std::filesystem::path folder, std::string keyPrefix, std::vector<QuantizedLayer> headers);

    std::size_t size() const { return headers_.size(); }
    const std::vector<QuantizedLayer>& headers() const { return headers_; }
    // Layer `layer`'s complete linears, read from the folder (throws qs::Error when it is gone).
    QuantizedLayer load(std::size_t layer) const;
    const std::filesystem::path& folder() const { return folder_; }

private:
    std::filesystem::path folder_;
    std::string keyPrefix_;
    std::vector<QuantizedLayer> headers_;
};

// A writer's view of StoredLayers: each linear by its full name ("model.layers.3.mlp.down_proj"), read
// back with its layer, which is held until a linear of another layer is asked for (writers go layer
// by layer, so each layer is read about once and one is in memory at a time).
class StoredLinearReader {
public:
    // `layerPrefix(i)` names layer i's tensors ("model.layers.3.", a VLM's text tower prefix).
    StoredLinearReader(std::shared_ptr<const StoredLayers> stored,
                       const std::function<std::string(std::size_t)>& layerPrefix);

    std::shared_ptr<const quant::QuantizedLinear> complete(const std::string& name);

private:
    std::shared_ptr<const StoredLayers> stored_;
    std::map<std::string, std::pair<std::size_t, std::string>> where_;  // name -> (layer, module)
    std::size_t heldIndex_ = 0;
    QuantizedLayer held_;
};

}  // namespace qs::pipeline
