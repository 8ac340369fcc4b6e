#pragma once
// Runs llama_judge.mjs (llama.cpp through node-llama-cpp) on a request and returns its JSON answer:
// llama.cpp's tokenization of texts and its next-token distributions for token sequences.
#include <nlohmann/json.hpp>

namespace qs::interop {

// Throws std::runtime_error with node's stderr when the script fails.
nlohmann::json runLlamaJudge(const nlohmann::json& request);

}  // namespace qs::interop
