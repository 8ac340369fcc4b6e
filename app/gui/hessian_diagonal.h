#pragma once
// The Hessian diagonal of one decoder layer's linear inputs after a short calibration: the
// calibration text runs through the layers before it, and the layer's inputs are accumulated as
// calibration does (pipeline::LayerStatistics). Plain C++, run on a worker by the Hessian tab.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "qs/io/checkpoint.h"
#include "qs/cancel_token.h"

namespace qs::gui {

struct HessianDiagonal {
    std::vector<double> diagonal;   // H_cc = 2 Σ x_c² / n per input channel
    std::vector<int> actOrderRank;  // per channel: its place in GPTQ's act-order (0 = quantized first)
};

struct LayerHessians {
    int layer = 0;
    std::int64_t samples = 0;                         // calibration rows (tokens) seen
    std::map<std::string, HessianDiagonal> modules;   // by module ("self_attn.q_proj")
};

struct HessianRequest {
    std::shared_ptr<const io::Checkpoint> checkpoint;
    int layer = 0;
    int samples = 8;
    int sequenceLength = 128;
};

// Throws qs::Error (no tokenizer, no calibration text, not a decoder checkpoint) or qs::Cancelled.
LayerHessians computeLayerHessians(const HessianRequest& request, const qs::CancelToken& cancel);

// GPTQ's act-order: channels by descending H_cc, ties in channel order (a stable sort, as quant::gptq).
std::vector<int> actOrderRanks(const std::vector<double>& diagonal);

}  // namespace qs::gui
