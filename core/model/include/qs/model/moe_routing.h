#pragma once
// The routing of a sparse MoE block as transformers computes it (Qwen3MoeSparseMoeBlock,
// MixtralSparseMoeBlock): p = softmax(router logits) over all experts, the top-k experts of each
// token by p, their weights p renormalised to sum 1 when normTopkProb, else p as it is.
#include <vector>

#include "qs/matrix.h"

namespace qs::model {

struct ExpertRouting {
    // tokens[e]: the rows routed to expert e, ascending; weights[e][i]: the weight of tokens[e][i].
    std::vector<std::vector<Eigen::Index>> tokens;
    std::vector<std::vector<float>> weights;
};

// logits [T, numExperts]; 1 <= topK <= numExperts. Equal probabilities go to the lower expert index.
ExpertRouting routeTokens(const MatrixF& logits, int topK, bool normTopkProb);

}  // namespace qs::model
