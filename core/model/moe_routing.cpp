#include "qs/model/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "qs/error.h"

namespace qs::model {

ExpertRouting routeTokens(const MatrixF& logits, int topK, bool normTopkProb) {
    const Eigen::Index experts = logits.cols();
    if (topK < 1 || topK > experts)
        throw Error("MoE routing: top-k " + std::to_string(topK) + " of " + std::to_string(experts) + " experts");
    ExpertRouting r;
    r.tokens.resize(static_cast<std::size_t>(experts));
    r.weights.resize(static_cast<std::size_t>(experts));
    std::vector<double> p(static_cast<std::size_t>(experts));
    std::vector<int> order(static_cast<std::size_t>(experts));
    for (Eigen::Index t = 0; t < logits.rows(); ++t) {
        // Softmax in double: transformers computes it in f32 from the same logits; the difference is
        // far below what could reorder experts that are not tied anyway.
        const double top = logits.row(t).maxCoeff();
        double sum = 0.0;
        for (Eigen::Index e = 0; e < experts; ++e)
            sum += p[static_cast<std::size_t>(e)] = std::exp(double(logits(t, e)) - top);
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + topK, order.end(), [&](int a, int b) {
            return p[static_cast<std::size_t>(a)] > p[static_cast<std::size_t>(b)] ||
                   (p[static_cast<std::size_t>(a)] == p[static_cast<std::size_t>(b)] && a < b);
        });
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

}  // namespace qs::model
