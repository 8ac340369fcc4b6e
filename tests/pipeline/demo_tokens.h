#pragma once
// The bundled demo's own texts as token windows, tokenized by its tokenizer: the calibration and
// evaluation of the tests that run a Job on the demo.
#include <filesystem>

#include "qs/model/tokenizer.h"
#include "qs/pipeline/calibration_text.h"

namespace qs::test {

inline std::filesystem::path demoCheckpoint() { return std::filesystem::path(QS_RESOURCES_DIR) / "demo"; }

// `samples` windows of `length` tokens of the demo's `file` ("calibration.txt", "eval.txt").
inline pipeline::TokenSequences demoTokens(const char* file, int samples, int length) {
    const auto tokenizer = model::Tokenizer::fromFile(demoCheckpoint());
    return pipeline::tokenWindows(tokenizer, pipeline::loadTexts(demoCheckpoint() / file), samples, length, file);
}

}  // namespace qs::test
