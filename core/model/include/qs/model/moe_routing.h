#pragma once
// The routing of a sparse MoE block as transformers computes it:
//  * softmax (Qwen3MoeSparseMoeBlock, MixtralSparseMoeBlock): p = softmax(router logits) over all experts,
//    the top-k experts of each token by p, their weights p renormalised to sum 1 when normTopkProb;
//  * sigmoid, grouped (Glm4MoeTopkRouter, DeepseekV3TopkRouter): s = sigmoid(logits); the choice reads
//    c = s + e_score_correction_bias; the experts fall into n_group groups, each scored by the sum of its
//    two best c, and the topk_group best groups stay; the others' c become 0 (transformers' masked_fill,
//    where llama.cpp uses -inf: they differ when a kept c is negative), the top-k c choose the experts,
//    whose weights are their s, renormalised (plus 1e-20) when normTopkProb, times routed_scaling_factor.
#include <vector>

#include "qs/matrix.h"
#include "qs/model/model_config.h"

namespace qs::model {

struct ExpertRouting {
    // tokens[e]: the rows routed to expert e, ascending; weights[e][i]: the weight of tokens[e][i].
    std::vector<std::vector<Eigen::Index>> tokens;
    std::vector<std::vector<float>> weights;
};

// logits [T, numExperts]; 1 <= topK <= numExperts. Equal scores go to the lower expert index.
ExpertRouting routeTokens(const MatrixF& logits, int topK, bool normTopkProb);

// As `moe` routes (MoeConfig::scoring); `scoreBias` ([numExperts], empty: none) is the sigmoid router's
// e_score_correction_bias.
ExpertRouting routeTokens(const MatrixF& logits, const MoeConfig& moe, const VectorF& scoreBias);

}  // namespace qs::model
