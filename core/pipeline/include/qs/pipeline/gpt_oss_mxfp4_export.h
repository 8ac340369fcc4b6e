#pragma once
// gpt-oss in BF16 (as transformers dequantizes it, and as people fine-tune it) brought back to the
// MXFP4 layout OpenAI ships (docs/formats/gpt-oss-mxfp4.md), without a forward pass: every stacked
// expert tensor `model.layers.L.mlp.experts.{gate_up_proj,down_proj}` [E, in, out] is quantized
// per expert with quant::quantizeMxfp4 (OCP's shared exponent floor(log2 amax) - 2) and written as
// `<name>_blocks` U8 [E, out, in/32, 16] and `<name>_scales` U8 [E, out, in/32]; every other tensor
// (attention, router, biases, embeddings, norms) is copied as it is, and config.json gains the
// quantization_config transformers and vLLM read. A checkpoint that was MXFP4 before and was only
// dequantized comes back with the same weights: every value it decodes to is one MXFP4 holds.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/io/checkpoint.h"
#include "qs/progress.h"

namespace qs::pipeline {

// model_type gpt_oss with its experts stacked in a float dtype (not already MXFP4).
bool isDenseGptOss(const io::Checkpoint& checkpoint);

struct GptOssMxfp4Request {
    std::filesystem::path source;
    std::filesystem::path destination;  // must not exist unless overwrite
    bool overwrite = false;
};

// The damage MXFP4 did to one stacked tensor, over all its experts: ||W - Q|| / ||W||.
struct GptOssTensorError {
    std::string tensor;
    std::int64_t experts = 0;
    double relativeError = 0.0;
};

struct GptOssMxfp4Report {
    std::filesystem::path written;
    std::vector<GptOssTensorError> tensors;
    std::int64_t quantizedWeights = 0;  // elements of the expert tensors, now 4.25 bits each
    std::uint64_t bytesBefore = 0;      // of every tensor
    std::uint64_t bytesAfter = 0;
};

// Throws qs::Error naming the file and tensor (not gpt-oss, already MXFP4, an expert tensor whose
// input width is not a multiple of 32, a non-finite weight, I/O) or qs::Cancelled; nothing is left
// at the destination then.
GptOssMxfp4Report exportGptOssMxfp4(const GptOssMxfp4Request& request, const ProgressCallback& progress,
                                    const CancelToken& cancel);

}  // namespace qs::pipeline
