#pragma once
// The Hessian diagonal of one decoder layer's linear inputs, as the Hessian tab and
// `quantscope-cli inspect --hessian` show it: the calibration text runs through the layers before it
// on the chosen backend (one layer's weights loaded at a time, only the hidden states kept between
// layers), and the layer's inputs are accumulated as diag(H) alone (Backend::hessianDiagonal):
// H_cc = 2 Σ x_c² / n per input channel, O(T·n) work and n numbers per input, where the full H that
// GPTQ needs costs O(T·n²) and n² (a 14336-wide down_proj's H and its f64 sums: 1.6 GB).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/io/checkpoint.h"
#include "qs/pipeline/backend.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/progress.h"

namespace qs::pipeline {

struct HessianDiagonal {
    std::vector<double> diagonal;   // H_cc = 2 Σ x_c² / n per input channel
    std::vector<int> actOrderRank;  // per channel: its place in GPTQ's act-order (0 = quantized first)
    // An expert's linear: the calibration tokens the router sent to that expert (its diagonal is over
    // every token, as the Job's default all-expert calibration sees it); -1 for the other linears.
    std::int64_t routedTokens = -1;
};

struct LayerHessianDiagonals {
    int layer = 0;
    std::int64_t samples = 0;                        // calibration rows (tokens) seen
    std::map<std::string, HessianDiagonal> modules;  // every linear of the layer ("self_attn.q_proj");
                                                     // linears that read one input share its diagonal
};

// A mixture of experts is calibrated as the Job calibrates it by default: the layers route as the model
// does, and every expert's linears see every token (their gate/up share the block's input). A quantized
// checkpoint runs on its decoded weights, as the Job calibrates from them (quantized_source.h).
// Throws qs::Error (not a decoder checkpoint, linears that do not decode, no such layer, no text) or
// qs::Cancelled. Progress: stage "calibrate", one step per layer run.
LayerHessianDiagonals hessianDiagonals(const io::Checkpoint& checkpoint, int layer, const TokenSequences& text,
                                       const Backend& backend, const ProgressCallback& progress,
                                       const CancelToken& cancel);

// GPTQ's act-order: channels by descending H_cc, ties in channel order (a stable sort, as quant::gptq).
std::vector<int> actOrderRanks(const std::vector<double>& diagonal);

}  // namespace qs::pipeline
