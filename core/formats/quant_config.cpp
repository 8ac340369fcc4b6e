#include "quant_config.h"

#include <algorithm>
#include <cctype>
#include <fstream>

#include "qs/error.h"

namespace qs::formats::detail {

nlohmann::json readJsonFile(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) return {};
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
        throw Error(path.string() + ": not valid JSON (" + e.what() + ")");
    }
}

namespace {

// hf_quant_config.json: {"producer": {...}, "quantization": {"quant_algo", "group_size",
// "exclude_modules", "quantized_layers", ...}} -> the config.json form (docs/formats/modelopt.md).
nlohmann::json flattenModelOpt(const nlohmann::json& nested) {
    nlohmann::json flat = nested.at("quantization");
    flat["quant_method"] = "modelopt";
    if (flat.contains("exclude_modules") && !flat.contains("ignore")) flat["ignore"] = flat["exclude_modules"];
    if (nested.contains("producer")) flat["producer"] = nested["producer"];
    return flat;
}

nlohmann::json normalise(nlohmann::json q) {
    if (!q.is_object()) return {};
    if (q.contains("quantization") && q["quantization"].is_object()) return flattenModelOpt(q);
    return q;
}

}  // namespace

nlohmann::json loadQuantConfig(const io::Checkpoint& checkpoint) {
    if (auto q = normalise(checkpoint.quantizationConfig()); !q.empty()) return q;
    const auto& root = checkpoint.root();
    if (auto q = readJsonFile(root / "quantize_config.json"); q.is_object() && !q.empty()) {
        if (!q.contains("quant_method")) q["quant_method"] = "gptq";   // AutoGPTQ's own file names no method
        return q;
    }
    if (auto q = normalise(readJsonFile(root / "hf_quant_config.json")); !q.empty()) return q;
    return {};
}

int jsonInt(const nlohmann::json& j, std::string_view key, int fallback) {
    const auto it = j.find(std::string(key));
    if (it == j.end() || it->is_null()) return fallback;
    if (it->is_number()) return it->get<int>();
    if (it->is_boolean()) return it->get<bool>() ? 1 : 0;
    if (it->is_string()) {
        try {
            return std::stoi(it->get<std::string>());
        } catch (const std::exception&) {
        }
    }
    throw Error("quantization config: '" + std::string(key) + "' is " + it->dump() + ", expected an integer");
}

bool jsonBool(const nlohmann::json& j, std::string_view key, bool fallback) {
    const auto it = j.find(std::string(key));
    if (it == j.end() || it->is_null()) return fallback;
    if (it->is_boolean()) return it->get<bool>();
    if (it->is_number()) return it->get<double>() != 0.0;
    if (it->is_string()) return lowerCase(it->get<std::string>()) == "true";
    throw Error("quantization config: '" + std::string(key) + "' is " + it->dump() + ", expected a boolean");
}

std::string jsonString(const nlohmann::json& j, std::string_view key, std::string fallback) {
    const auto it = j.find(std::string(key));
    if (it == j.end() || !it->is_string()) return fallback;
    return it->get<std::string>();
}

std::string lowerCase(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

}  // namespace qs::formats::detail
