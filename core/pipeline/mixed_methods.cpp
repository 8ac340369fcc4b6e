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

std::string mixRefusal(const MethodSpec& m) {
    const std::string named = m.label() + " (" + m.name + ")";  // as the GUI shows it and as the CLI takes it
    if (m.kind == MethodKind::Awq || m.ggufFileMix())
        return named + " chooses for a whole layer and cannot be mixed per linear" +
               (m.gguf() ? " (a mix takes ggml types per linear: q3_K, q4_K, q5_K, q6_K, q8_0, ...)" : "");
    if (m.kvCacheFp8 || m.activations != quant::ActivationFormat::None)
        return named + " quantizes activations, which a per-linear mix does not calibrate";
    return "";
}

std::string mixFormatRefusal(const MethodSpec& m, const std::string& format) {
    if (format == "gguf" && !m.ggmlType)
        return m.name +
               " cannot be written into a GGUF file: a mix exported as GGUF takes ggml types per linear "
               "(q3_K, q4_K, q5_K, q6_K, q8_0, ...)";
    if (format != "gguf" && m.ggmlType)
        return m.name +
               " is a ggml type, which only a GGUF file holds: write the mix with --format gguf --out FILE.gguf, not "
               "as " +
               format;
    return "";
}

void MixedMethods::check() const {
    for (std::size_t l = 0; l < layers.size(); ++l)
        for (const auto& [module, m] : layers[l])
            if (const std::string why = mixRefusal(m); !why.empty())
                throw Error(moduleName(static_cast<int>(l), module) + ": " + why);
}

}  // namespace qs::pipeline
