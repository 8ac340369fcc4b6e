#include "qs/io/json_file.h"

#include <set>
#include <vector>

#include "qs/error.h"
#include "qs/io/regular_file.h"

namespace qs::io {

namespace {

// Raised inside the parser callback, which can only stop parsing by throwing.
struct JsonProblem {
    std::string message;
};

}  // namespace

nlohmann::json parseJson(std::string_view text, const std::string& source, const JsonLimits& limits) {
    using nlohmann::json;
    // JSON has no NUL (a string escapes it as \u0000); nlohmann would end the document there and
    // silently drop whatever follows.
    if (const auto nul = text.find('\0'); nul != std::string_view::npos)
        throw Error(source + ": not valid JSON: a NUL byte at byte " + std::to_string(nul));
    std::vector<std::set<std::string>> keysPerObject;
    auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
        if (depth > limits.maxDepth)
            throw JsonProblem{"nests deeper than " + std::to_string(limits.maxDepth) + " levels"};
        if (!limits.rejectDuplicateKeys) return true;
        if (event == json::parse_event_t::object_start) {
            keysPerObject.emplace_back();
        } else if (event == json::parse_event_t::object_end) {
            if (!keysPerObject.empty()) keysPerObject.pop_back();
        } else if (event == json::parse_event_t::key && !keysPerObject.empty()) {
            const auto& key = parsed.get_ref<const std::string&>();
            if (!keysPerObject.back().insert(key).second) throw JsonProblem{"has the key '" + key + "' twice"};
        }
        return true;
    };
    try {
        return json::parse(text.begin(), text.end(), callback);
    } catch (const JsonProblem& p) {
        throw Error(source + ": " + p.message);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers past double
        throw Error(source + ": not valid JSON: " + jsonErrorText(e));
    }
}

std::string jsonErrorText(const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (what.starts_with("[json.exception."))
        if (const auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    return what;
}

nlohmann::json readJsonFile(const std::filesystem::path& path, const JsonLimits& limits) {
    return parseJson(readRegularFile(path, limits.maxBytes, "a JSON file"), path.string(), limits);
}

}  // namespace qs::io
