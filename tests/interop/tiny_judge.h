#pragma once
// llama.cpp's next-token distributions against our forward pass: the KL between them, and the run of a
// tiny checkpoint's F32 GGUF export through llama.cpp (the families' interop tests).
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/io/checkpoint.h"
#include "qs/matrix.h"
#include "qs/model/layer_weights.h"
#include "qs/model/model_config.h"
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

// Our forward pass without one feature (a negative control): the config and every decoder layer as `config`
// and `layer` leave them (empty: as they are).
struct Control {
    std::string feature;
    std::function<void(model::ModelConfig&)> config{};
    std::function<void(model::LayerWeights&)> layer{};
};

// The mean KL of llama.cpp's distributions `theirs` (one per token) against our forward pass over `tokens` with
// `control` applied, over the positions from `from` on; printed as one line named by the control's feature.
double klWith(const nlohmann::json& theirs, const io::Checkpoint& checkpoint, const std::vector<model::TokenId>& tokens,
              const Control& control, std::size_t from = 0);

}  // namespace qs::interop
