#pragma once
// Checkpoint evaluation: how far a quantized checkpoint's next-token distributions are from its
// original's, on held-out text, whatever format either is stored in (dense, GPTQ, AWQ, FP8, ...).
// Both models run side by side one decoder layer at a time (linears decoded per layer, so neither is
// ever held in f32 as a whole); only their hidden states travel between layers, and the KL report of
// llama.cpp's --kl-divergence is accumulated from the final logits.
#include <filesystem>
#include <string>
#include <vector>

#include "qs/analysis/kl_metrics.h"
#include "qs/cancel_token.h"
#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/progress.h"

namespace qs::pipeline {

// What `eval` scores when not told otherwise (its --samples and --seq-len), and the GUI's Evaluate always.
inline constexpr int kCheckpointEvalSamples = 32;
inline constexpr int kCheckpointEvalSeqLen = 512;

struct CheckpointEvalPlan {
    std::filesystem::path original;
    std::filesystem::path quantized;
    TokenSequences evaluation;    // token ids of the original's tokenizer (see sharedTokenWindows)
    bool allowNonFinite = false;  // else a linear (of either side) that decodes to NaN or Inf is refused
};

struct CheckpointEvalResult {
    analysis::KlReport kl;
    std::string originalFormat;  // "dense", "gptq (gptq)", "fp8 (block)", ...
    std::string quantizedFormat;
    std::size_t evaluationTokens = 0;
    double seconds = 0.0;
};

// Throws qs::Error listing every difference between the two models' forward passes: model_type,
// layers, hidden and intermediate size, heads, head size, vocabulary, rms_norm_eps, rope_theta and
// rope_scaling, tied embeddings (a quantized model may untie a tied original: --rotate), biases, q/k norms,
// sliding window. KL compares two versions of one model.
void requireSameModelShape(const model::ModelConfig& original, const model::ModelConfig& quantized,
                           const std::string& originalName, const std::string& quantizedName);

// `texts` tokenized with the original's tokenizer and cut into windows (tokenWindows). When the
// quantized checkpoint ships a tokenizer of its own (tokenizer.json, or a GGUF's metadata), its
// tokens must be the original's (a GGUF may add unused padding after them) and give the same ids:
// throws qs::Error where they do not.
TokenSequences sharedTokenWindows(const io::Checkpoint& original, const io::Checkpoint& quantized,
                                  const std::vector<std::string>& texts, int samples, int seqLen,
                                  const std::string& sourceName);

// Throws qs::Error (unreadable checkpoint, different model shapes, no evaluation text) or
// qs::Cancelled.
CheckpointEvalResult evaluateCheckpoints(const CheckpointEvalPlan& plan, const ProgressCallback& progress,
                                         const CancelToken& cancel);

}  // namespace qs::pipeline
