#pragma once
// What the end-to-end export tests of one tiny real-layout checkpoint (tests/data/phi3, gemma3, vlm)
// share: calibration tokens from its own tokenizer, one method quantized by the Job, the Job's model
// (the original with each quantized linear's effective weight in place) and a byte comparison of two
// tensors.
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "qs/cancel_token.h"
#include "qs/io/checkpoint.h"
#include "qs/model/tokenizer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/job.h"

namespace qs::test {

// `samples` windows of `length` tokens of the demo calibration text, in the checkpoint's own tokenizer.
inline pipeline::TokenSequences tinyTokens(const std::filesystem::path& checkpoint, int samples, int length) {
    const auto tokenizer = model::Tokenizer::fromFile(checkpoint);
    const auto text = std::filesystem::path(QS_RESOURCES_DIR) / "demo" / "calibration.txt";
    return pipeline::tokenWindows(tokenizer, pipeline::loadTexts(text), samples, length, "calibration.txt");
}

// One method (group size 16: the tiny models are narrow) calibrated on 8 × 64 tokens; throws its error.
inline pipeline::MethodResult quantizeTiny(const std::filesystem::path& checkpoint, const std::string& method) {
    pipeline::JobPlan plan;
    plan.checkpoint = checkpoint;
    plan.methods = {pipeline::parseMethod(method, 16)};
    plan.calibration = tinyTokens(checkpoint, 8, 64);
    auto result = pipeline::Job(std::move(plan)).run({}, CancelToken{});
    if (!result.methods.front().error.empty()) throw std::runtime_error(result.methods.front().error);
    return std::move(result.methods.front());
}

// The Job's model: the original with each quantized linear's effective weight in place.
inline model::Transformer jobModel(const std::filesystem::path& checkpoint, const pipeline::MethodResult& result) {
    auto model = model::Transformer::fromCheckpoint(io::Checkpoint::open(checkpoint));
    for (std::size_t i = 0; i < result.layers.size(); ++i)
        for (const auto& [module, q] : result.layers[i])
            model.overrideLinear(static_cast<int>(i), module, [q] { return q->effectiveWeight(); });
    return model;
}

inline bool sameBytes(const io::TensorView& a, const io::TensorView& b) {
    return a.dtype() == b.dtype() && a.shape() == b.shape() && a.bytes().size() == b.bytes().size() &&
           std::memcmp(a.bytes().data(), b.bytes().data(), a.bytes().size()) == 0;
}

}  // namespace qs::test
