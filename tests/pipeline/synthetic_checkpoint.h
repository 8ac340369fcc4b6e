#pragma once
// Writes small Llama-shaped checkpoints with random weights for the pipeline tests, optionally with
// outlier input channels: a few hidden channels whose RMSNorm weights are scaled up, so every linear
// reading the normed hidden state sees those channels much larger than the rest (what AWQ protects).
#include <filesystem>
#include <vector>

#include "qs/io/dtype.h"
#include "qs/model/tokenizer.h"

namespace qs::test {

struct SyntheticModel {
    int layers = 2;
    int hidden = 64;
    int intermediate = 128;
    int heads = 4;
    int kvHeads = 2;
    int vocab = 96;
    std::vector<int> outlierChannels;  // hidden channels scaled by outlierScale in every RMSNorm
    float outlierScale = 8.0f;
    // Layers whose o_proj and down_proj write fragileScale times more into the residual stream, so
    // their quantization noise weighs more in the output than other layers' (a relative output error
    // cannot tell; a per-layer KL can).
    std::vector<int> fragileLayers;
    float fragileScale = 6.0f;
    unsigned seed = 1;
    io::DType dtype = io::DType::F32;  // how every tensor is stored (BF16 for a realistic checkpoint)
    int maxPositions = 512;
    // experts > 0: a Mixtral (model_type "mixtral"): every layer's MLP is a router block_sparse_moe.gate
    // and `experts` SwiGLU experts w1 (gate), w3 (up), w2 (down) of `intermediate` width, top expertsPerToken.
    int experts = 0;
    int expertsPerToken = 2;
};

void writeSyntheticCheckpoint(const std::filesystem::path& dir, const SyntheticModel& model);

// Deterministic pseudo-text: `count` sequences of `length` token ids below `vocab`, with some
// repetition so a model has structure to lose.
std::vector<std::vector<model::TokenId>> syntheticTokens(int count, int length, int vocab, unsigned seed);

}  // namespace qs::test
