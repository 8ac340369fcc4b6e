#pragma once
// Runs llama_judge.mjs (llama.cpp through node-llama-cpp) on a request and returns its JSON answer:
// llama.cpp's tokenization of texts and its next-token distributions for token sequences.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qs::interop {

// Throws std::runtime_error with node's stderr when the script fails.
nlohmann::json runLlamaJudge(const nlohmann::json& request);

// llama.cpp's warnings in an answer that say the file lacks something it wanted.
std::vector<std::string> missingKeyWarnings(const nlohmann::json& answer);

}  // namespace qs::interop
