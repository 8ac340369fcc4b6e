#include "quant_config.h"

#include <algorithm>
#include <cctype>

#include "qs/io/json_file.h"

namespace qs::formats::detail {

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

// The side file's content, {} when it does not exist; refused when it is not an object.
nlohmann::json readSideFile(const std::filesystem::path& path) {
    if (!std::filesystem::exists(path)) return {};
    nlohmann::json j = io::readJsonFile(path);
    if (!j.is_object()) throw Error(path.string() + ": must be a JSON object, but it is " + io::jsonKind(j));
    return j;
}

std::string keyName(std::string_view at, std::string_view key) {
    return at.empty() ? "'" + std::string(key) + "'" : std::string(at) + ": '" + std::string(key) + "'";
}

}  // namespace

QuantConfig loadQuantConfig(const io::Checkpoint& checkpoint) {
    const auto& root = checkpoint.root();
    const auto& inConfig = checkpoint.quantizationConfig();
    if (auto q = normalise(inConfig); !q.empty()) {
        const bool own = checkpoint.config().contains("quantization_config");
        return {std::move(q), own ? (root / "config.json").string() + ": quantization_config"
                                  : (root / "hf_quant_config.json").string()};
    }
    if (auto q = readSideFile(root / "quantize_config.json"); !q.empty()) {
        if (!q.contains("quant_method")) q["quant_method"] = "gptq";  // AutoGPTQ's own file names no method
        return {std::move(q), (root / "quantize_config.json").string()};
    }
    if (auto q = normalise(readSideFile(root / "hf_quant_config.json")); !q.empty())
        return {std::move(q), (root / "hf_quant_config.json").string()};
    return {};
}

void rethrowWithSource(const ConfigError& e, const std::string& source) {
    throw Error((source.empty() ? std::string("quantization config") : source) + ": " + e.what());
}

int jsonInt(const nlohmann::json& j, std::string_view key, int fallback, io::IntRange range, std::string_view at) {
    const auto it = j.find(std::string(key));
    if (it == j.end() || it->is_null()) return fallback;
    try {
        return static_cast<int>(io::jsonInteger(*it, keyName(at, key), range));
    } catch (const Error& e) {
        throw ConfigError(e.what());
    }
}

bool jsonBool(const nlohmann::json& j, std::string_view key, bool fallback, std::string_view at) {
    const auto it = j.find(std::string(key));
    if (it == j.end() || it->is_null()) return fallback;
    if (it->is_boolean()) return it->get<bool>();
    if (it->is_number() && (it->get<double>() == 0.0 || it->get<double>() == 1.0)) return it->get<double>() != 0.0;
    if (it->is_string()) {
        const auto text = lowerCase(it->get<std::string>());
        if (text == "true" || text == "false") return text == "true";
    }
    throw ConfigError(keyName(at, key) + " is " + it->dump() + ", expected true or false");
}

std::string jsonString(const nlohmann::json& j, std::string_view key, std::string fallback, std::string_view at) {
    const auto it = j.find(std::string(key));
    if (it == j.end() || it->is_null()) return fallback;
    if (!it->is_string()) throw ConfigError(keyName(at, key) + " is " + it->dump() + ", expected a string");
    return it->get<std::string>();
}

std::string lowerCase(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

}  // namespace qs::formats::detail
