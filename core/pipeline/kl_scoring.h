#pragma once
// The last step of every KL evaluation: final hidden states become next-token logits, and each
// compared model's distributions are scored against the original's at every position that has a
// next token. The original's logits are computed once per sequence and shared by every stream.
#include <functional>
#include <vector>

#include "qs/analysis/kl_metrics.h"
#include "qs/model/transformer.h"

#include "hidden_states.h"

namespace qs::pipeline {

struct KlStream {
    const model::Transformer* head = nullptr;  // whose final norm and lm_head make the logits
    const HiddenStream* hidden = nullptr;      // final hidden states per sequence; nullptr: not scored
};

// Called before sequence i (0-based) of n is scored.
using ScoringProgress = std::function<void(std::size_t i, std::size_t n)>;

// One accumulator per stream (empty for a stream without hidden states), over `sequences`' targets.
std::vector<analysis::KlAccumulator> scoreKl(const KlStream& original, const std::vector<KlStream>& streams,
                                             const TokenSequences& sequences, const CancelToken& cancel,
                                             const ScoringProgress& progress = {});

}  // namespace qs::pipeline
