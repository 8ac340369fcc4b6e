#include "llama_judge.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

#include "llama_libraries.h"

namespace qs::interop {

namespace {

std::string readAll(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string shellQuoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

}  // namespace

nlohmann::json runLlamaJudge(const nlohmann::json& request) {
    static int calls = 0;
    const auto base = std::filesystem::temp_directory_path() /
                      ("qs_llama_judge_" + std::to_string(::getpid()) + "_" + std::to_string(calls++));
    const auto requestFile = base.string() + ".request.json", answerFile = base.string() + ".answer.json",
               errorFile = base.string() + ".stderr";
    std::ofstream(requestFile) << request.dump();
    const std::string command = "cd " + shellQuoted(interopDir()) + " && node llama_judge.mjs " +
                                shellQuoted(requestFile) + " > " + shellQuoted(answerFile) + " 2> " +
                                shellQuoted(errorFile);
    const int status = std::system(command.c_str());
    const std::string answer = readAll(answerFile), errors = readAll(errorFile);
    for (const auto& f : {requestFile, answerFile, errorFile}) std::filesystem::remove(f);
    if (status != 0)
        throw std::runtime_error("llama_judge.mjs failed (status " + std::to_string(status) + "): " + errors);
    try {
        return nlohmann::json::parse(answer);
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(std::string("llama_judge.mjs wrote no JSON: ") + e.what() + "; stderr: " + errors);
    }
}

std::vector<std::string> missingKeyWarnings(const nlohmann::json& answer) {
    std::vector<std::string> out;
    for (const auto& w : answer.at("warnings")) {
        const std::string text = w.get<std::string>();
        if (text.find("missing") != std::string::npos || text.find("not found") != std::string::npos ||
            text.find("GENERATION QUALITY") != std::string::npos)
            out.push_back(text);
    }
    return out;
}

}  // namespace qs::interop
