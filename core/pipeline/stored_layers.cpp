#include "qs/pipeline/stored_layers.h"

#include "qs/error.h"
#include "qs/pipeline/work_folder.h"

namespace qs::pipeline {

quant::QuantizedLinear linearHeader(const quant::QuantizedLinear& q) {
    quant::QuantizedLinear header = q;
    std::vector<std::uint8_t>().swap(header.codes);
    std::vector<std::uint8_t>().swap(header.blocks);
    return header;
}

StoredLayers::StoredLayers(std::filesystem::path folder, std::string keyPrefix, std::vector<QuantizedLayer> headers)
    : folder_(std::move(folder)), keyPrefix_(std::move(keyPrefix)), headers_(std::move(headers)) {}

QuantizedLayer StoredLayers::load(std::size_t layer) const {
    if (layer >= headers_.size()) throw Error("no stored layer " + std::to_string(layer));
    auto linears = WorkFolder::loadLinears(folder_, static_cast<int>(layer), keyPrefix_);
    QuantizedLayer out;
    for (const auto& [module, header] : headers_[layer]) {
        const auto it = linears.find(module);
        if (it == linears.end())
            throw Error(folder_.string() + ": layer " + std::to_string(layer) + " has no stored " + module);
        out.emplace(module, std::make_shared<const quant::QuantizedLinear>(std::move(it->second)));
    }
    return out;
}

StoredLinearReader::StoredLinearReader(std::shared_ptr<const StoredLayers> stored,
                                       const std::function<std::string(std::size_t)>& layerPrefix)
    : stored_(std::move(stored)) {
    for (std::size_t i = 0; i < stored_->size(); ++i)
        for (const auto& [module, q] : stored_->headers()[i])
            where_.emplace(layerPrefix(i) + module, std::make_pair(i, module));
}

std::shared_ptr<const quant::QuantizedLinear> StoredLinearReader::complete(const std::string& name) {
    const auto it = where_.find(name);
    if (it == where_.end()) throw Error(stored_->folder().string() + ": no stored linear " + name);
    const auto& [layer, module] = it->second;
    if (held_.empty() || heldIndex_ != layer) {
        held_.clear();  // one layer at a time
        held_ = stored_->load(layer);
        heldIndex_ = layer;
    }
    return held_.at(module);
}

}  // namespace qs::pipeline
