#pragma once
// llama.cpp's next-token distributions against our forward pass: the KL between them, and the run of a
// tiny checkpoint's F32 GGUF export through llama.cpp (the families' interop tests).
#include <cstddef>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/matrix.h"
#include "qs/model/tokenizer.h"

namespace qs::interop {

// Mean and largest KL(llama.cpp || ours) over the positions of one sequence.
struct KlFigures {
    double mean = 0.0, max = 0.0;
    std::size_t positions = 0;
    std::size_t sameTop = 0;
};

// `theirs`: llama.cpp's probabilities, one list per position; `ourLogits` [positions, vocabulary].
// QS_INTEROP_VERBOSE=1 prints the KL of every position.
KlFigures compareDistributions(const nlohmann::json& theirs, const MatrixF& ourLogits);

// The first `count` tokens of the demo's evaluation text (the demo's byte-level tokenizer, vocabulary 320,
// which the tiny checkpoints share).
std::vector<model::TokenId> demoEvalTokens(std::size_t count);

// The checkpoint exported as an F32 GGUF into `dir`, and llama.cpp's distributions for `tokens` on it
// ("distributions" and "warnings" of the judge's answer).
nlohmann::json llamaCppOnF32Export(const std::filesystem::path& checkpoint, const std::filesystem::path& dir,
                                   const std::vector<model::TokenId>& tokens);

}  // namespace qs::interop
