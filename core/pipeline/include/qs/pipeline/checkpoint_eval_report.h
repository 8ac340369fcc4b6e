#pragma once
// The JSON form of a checkpoint evaluation: what `quantscope-cli eval --json` writes and what the GUI's
// `quantscope --evaluate --json` writes of the Results page, one shape for both.
#include <string>

#include <nlohmann/json.hpp>

#include "qs/pipeline/checkpoint_eval.h"

namespace qs::pipeline {

// {original, quantized, original_format, quantized_format, evaluation_tokens, time_s, kl}: the two
// paths as the user named them, `kl` as toJson(KlReport).
nlohmann::json checkpointEvalJson(const std::string& original, const std::string& quantized,
                                  const CheckpointEvalResult& result);

}  // namespace qs::pipeline
