#include "qs/pipeline/mixed_methods.h"

#include "qs/error.h"

namespace qs::pipeline {

std::string moduleName(int layer, std::string_view module, std::string_view tensorPrefix) {
    return std::string(tensorPrefix) + "layers." + std::to_string(layer) + "." + std::string(module);
}

const MethodSpec* MixedMethods::methodOf(int layer, std::string_view module) const {
    if (layer < 0 || static_cast<std::size_t>(layer) >= layers.size()) return nullptr;
    const auto& chosen = layers[static_cast<std::size_t>(layer)];
    const auto it = chosen.find(module);
    return it == chosen.end() ? nullptr : &it->second;
}

bool MixedMethods::needsCalibration() const {
    for (const auto& layer : layers)
        for (const auto& [module, m] : layer)
            if (m.needsCalibration()) return true;
    return false;
}

bool MixedMethods::sequential() const {
    for (const auto& layer : layers)
        for (const auto& [module, m] : layer)
            if (m.sequential()) return true;
    return false;
}

MethodSpec MixedMethods::summary() const {
    std::map<std::string, std::pair<int, const MethodSpec*>> counts;
    for (const auto& layer : layers)
        for (const auto& [module, m] : layer) {
            auto& c = counts[m.name];
            ++c.first;
            c.second = &m;
        }
    if (counts.empty()) throw Error(name + ": every linear is dense, so there is nothing to quantize");
    const MethodSpec* most = counts.begin()->second.second;
    int best = 0;
    for (const auto& [n, c] : counts)
        if (c.first > best) best = c.first, most = c.second;
    MethodSpec s = *most;
    s.name = name;
    return s;
}

void MixedMethods::check() const {
    for (std::size_t l = 0; l < layers.size(); ++l)
        for (const auto& [module, m] : layers[l]) {
            const std::string where = moduleName(static_cast<int>(l), module);
            if (m.kind == MethodKind::Awq || m.ggufFileMix())
                throw Error(where + ": " + m.label() + " chooses for a whole layer and cannot be mixed per linear" +
                            (m.gguf() ? " (a mix takes ggml types per linear: q3_K, q4_K, q5_K, q6_K, q8_0, ...)" : ""));
            if (m.kvCacheFp8 || m.activations != quant::ActivationFormat::None)
                throw Error(where + ": " + m.label() + " quantizes activations, which a per-linear mix does not calibrate");
        }
}

}  // namespace qs::pipeline
