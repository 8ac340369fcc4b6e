#pragma once
// Calibration and evaluation text: loaded from a UTF-8 text file or a JSON list of strings, then
// tokenized and cut into `samples` sequences of `seqLen` tokens (consecutive windows, in order, so
// that a run is reproducible; no window is repeated when the text is short — fewer samples are used).
#include <filesystem>
#include <string>
#include <vector>

#include "qs/model/tokenizer.h"

namespace qs::pipeline {

using TokenSequences = std::vector<std::vector<model::TokenId>>;

// A .json file must hold a list of strings; anything else is read as UTF-8 text.
std::vector<std::string> loadTexts(const std::filesystem::path& path);

// The texts' tokens (each text tokenized on its own, joined in order) cut into windows.
// Throws qs::Error when there are not even seqLen tokens.
TokenSequences tokenWindows(const model::Tokenizer& tokenizer, const std::vector<std::string>& texts, int samples,
                            int seqLen, const std::string& sourceName);

std::size_t tokenCount(const TokenSequences& sequences);

}  // namespace qs::pipeline
