#include "json_file.h"

#include <fstream>
#include <sstream>

#include "qs/error.h"

namespace qs::io::detail {

nlohmann::json readJsonFile(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path.string() + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    try {
        return nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for numbers past double
        std::string what = e.what();
        if (const auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
        throw Error(path.string() + ": not valid JSON: " + what);
    }
}

}  // namespace qs::io::detail
