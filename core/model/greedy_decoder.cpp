#include "qs/model/greedy_decoder.h"

#include <algorithm>
#include <string>

#include "qs/error.h"

namespace qs::model {

TokenId argmax(const Eigen::Ref<const VectorF>& logits) {
    if (logits.size() == 0) throw Error("argmax of an empty logit vector");
    Eigen::Index best = 0;
    for (Eigen::Index i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[best]) best = i;
    return static_cast<TokenId>(best);
}

std::vector<TokenId> greedyDecode(Transformer& model, std::span<const TokenId> prompt, int steps, TokenId stopToken) {
    if (prompt.empty()) throw Error("greedy decoding needs a prompt (at least a BOS token)");
    if (steps < 0) throw Error("greedy decoding: negative number of steps");
    const std::int64_t total = static_cast<std::int64_t>(prompt.size()) + steps;
    if (total > model.config().maxPositionEmbeddings)
        throw Error("greedy decoding: prompt + steps = " + std::to_string(total) + " exceed max_position_embeddings " +
                    std::to_string(model.config().maxPositionEmbeddings));
    KvCache cache(model.config(), static_cast<int>(std::max<std::int64_t>(total, 1)));
    std::vector<TokenId> generated;
    MatrixF logits = model.forward(prompt, cache);
    for (int s = 0; s < steps; ++s) {
        const TokenId next = argmax(logits.row(logits.rows() - 1).transpose());
        generated.push_back(next);
        if (next == stopToken || s + 1 == steps) break;
        logits = model.forward(std::span<const TokenId>(&generated.back(), 1), cache);
    }
    return generated;
}

}  // namespace qs::model
