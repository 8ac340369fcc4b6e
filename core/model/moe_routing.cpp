#include "qs/model/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <span>
#include <string>

#include "qs/error.h"

namespace qs::model {

namespace {

// The indices of the k largest values (equal values: the lower index first).
void topIndices(const std::vector<double>& values, int k, std::vector<int>& order) {
    order.resize(values.size());
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
        const double va = values[static_cast<std::size_t>(a)], vb = values[static_cast<std::size_t>(b)];
        return va > vb || (va == vb && a < b);
    });
    order.resize(static_cast<std::size_t>(k));
}

// An empty routing for `experts` experts, after checking that top-k picks 1 to all of them.
ExpertRouting routingFor(Eigen::Index experts, int topK) {
    if (topK < 1 || topK > experts)
        throw Error("MoE routing: top-k " + std::to_string(topK) + " of " + std::to_string(experts) + " experts");
    ExpertRouting r;
    r.tokens.resize(static_cast<std::size_t>(experts));
    r.weights.resize(static_cast<std::size_t>(experts));
    return r;
}

// A group's score: its two largest values, the larger first (transformers' topk(2).sum()).
double sumOfTopTwo(std::span<const double> values) {
    double first = -std::numeric_limits<double>::infinity(), second = first;
    for (const double v : values) {
        if (v > first) {
            second = first;
            first = v;
        } else if (v > second) {
            second = v;
        }
    }
    return first + second;
}

ExpertRouting routeSigmoidGrouped(const MatrixF& logits, const MoeConfig& moe, const VectorF& scoreBias) {
    const Eigen::Index experts = logits.cols();
    const int topK = moe.numExpertsPerToken, groups = moe.numGroups;
    if (topK < 1 || topK > experts || groups < 1 || experts % groups != 0 || moe.topkGroups < 1 ||
        moe.topkGroups > groups || (groups > 1 && experts / groups < 2))
        throw Error("MoE routing: top-k " + std::to_string(topK) + " of " + std::to_string(experts) + " experts in " +
                    std::to_string(groups) + " groups, " + std::to_string(moe.topkGroups) + " kept");
    if (scoreBias.size() != 0 && scoreBias.size() != experts)
        throw Error("MoE routing: " + std::to_string(scoreBias.size()) + " correction biases for " +
                    std::to_string(experts) + " experts");
    const auto perGroup = static_cast<std::size_t>(experts / groups);
    ExpertRouting r = routingFor(experts, topK);
    std::vector<double> score(static_cast<std::size_t>(experts)), choice(score.size()), groupScore;
    std::vector<int> keptGroups, chosen;
    std::vector<bool> kept(static_cast<std::size_t>(groups));
    for (Eigen::Index t = 0; t < logits.rows(); ++t) {
        for (Eigen::Index e = 0; e < experts; ++e) {
            // sigmoid in f32, as transformers computes it from f32 logits
            const float s = 1.0f / (1.0f + std::exp(-logits(t, e)));
            score[static_cast<std::size_t>(e)] = s;
            choice[static_cast<std::size_t>(e)] = scoreBias.size() == 0 ? s : s + scoreBias[e];
        }
        if (groups > 1) {
            groupScore.assign(static_cast<std::size_t>(groups), 0.0);
            for (std::size_t g = 0; g < static_cast<std::size_t>(groups); ++g) {
                groupScore[g] = sumOfTopTwo(std::span<const double>(choice).subspan(g * perGroup, perGroup));
            }
            topIndices(groupScore, moe.topkGroups, keptGroups);
            std::fill(kept.begin(), kept.end(), false);
            for (int g : keptGroups) kept[static_cast<std::size_t>(g)] = true;
            for (std::size_t e = 0; e < choice.size(); ++e)
                if (!kept[e / perGroup]) choice[e] = 0.0;  // transformers' masked_fill(~mask, 0.0)
        }
        topIndices(choice, topK, chosen);
        double sum = 0.0;
        for (int e : chosen) sum += score[static_cast<std::size_t>(e)];
        const double norm = moe.normTopkProb ? sum + 1e-20 : 1.0;
        for (int e : chosen) {
            const auto x = static_cast<std::size_t>(e);
            r.tokens[x].push_back(t);
            r.weights[x].push_back(static_cast<float>(score[x] / norm * moe.routedScalingFactor));
        }
    }
    return r;
}

// Llama4Router: the top-k logits choose (equal logits: the lower index), and the weight of a chosen expert is
// the sigmoid of its logit, in f32 as transformers computes it (the block scales the expert's input by it).
ExpertRouting routeSigmoidTopk(const MatrixF& logits, int topK) {
    const Eigen::Index experts = logits.cols();
    ExpertRouting r = routingFor(experts, topK);
    std::vector<double> values(static_cast<std::size_t>(experts));
    std::vector<int> order;
    for (Eigen::Index t = 0; t < logits.rows(); ++t) {
        for (Eigen::Index e = 0; e < experts; ++e) values[static_cast<std::size_t>(e)] = logits(t, e);
        topIndices(values, topK, order);
        for (int e : order) {
            const auto x = static_cast<std::size_t>(e);
            const float logit = logits(t, e);
            r.tokens[x].push_back(t);
            r.weights[x].push_back(1.0f / (1.0f + std::exp(-logit)));
        }
    }
    return r;
}

}  // namespace

ExpertRouting routeTokens(const MatrixF& logits, int topK, bool normTopkProb) {
    const Eigen::Index experts = logits.cols();
    ExpertRouting r = routingFor(experts, topK);
    std::vector<double> p(static_cast<std::size_t>(experts));
    std::vector<int> order;
    for (Eigen::Index t = 0; t < logits.rows(); ++t) {
        // Softmax in double: transformers computes it in f32 from the same logits; the difference is
        // far below what could reorder experts that are not tied anyway.
        const double top = logits.row(t).maxCoeff();
        double sum = 0.0;
        for (Eigen::Index e = 0; e < experts; ++e)
            sum += p[static_cast<std::size_t>(e)] = std::exp(double(logits(t, e)) - top);
        topIndices(p, topK, order);
        double chosen = 0.0;
        for (int i = 0; i < topK; ++i) chosen += p[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])];
        const double norm = normTopkProb ? chosen : sum;
        for (int i = 0; i < topK; ++i) {
            const auto e = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
            r.tokens[e].push_back(t);
            r.weights[e].push_back(static_cast<float>(p[e] / norm));
        }
    }
    return r;
}

ExpertRouting routeTokens(const MatrixF& logits, const MoeConfig& moe, const VectorF& scoreBias) {
    if (moe.scoring == RouterScoring::SigmoidGrouped) return routeSigmoidGrouped(logits, moe, scoreBias);
    if (moe.scoring == RouterScoring::SigmoidScalesInput) return routeSigmoidTopk(logits, moe.numExpertsPerToken);
    return routeTokens(logits, moe.numExpertsPerToken, moe.normTopkProb);
}

}  // namespace qs::model
