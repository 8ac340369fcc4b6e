#include "kl_scoring.h"

#include <span>

#include "qs/error.h"

namespace qs::pipeline {

std::vector<analysis::KlAccumulator> scoreKl(const KlStream& original, const std::vector<KlStream>& streams,
                                             const TokenSequences& sequences, const CancelToken& cancel,
                                             const ScoringProgress& progress) {
    if (original.hidden->size() != sequences.size())
        throw Error("KL scoring: hidden states and token sequences differ in count");
    std::vector<analysis::KlAccumulator> kl(streams.size());
    MatrixF buffer;  // a spilled stream's sequence, read from its file
    for (std::size_t i = 0; i < sequences.size(); ++i) {
        cancel.throwIfCancelled();
        if (progress) progress(i, sequences.size());
        // Positions 0 .. T-2 have a next token to score.
        const std::span<const model::TokenId> targets = std::span<const model::TokenId>(sequences[i]).subspan(1);
        const auto rows = static_cast<Eigen::Index>(targets.size());
        const MatrixF base = original.head->finalLogits(original.hidden->sequence(i, buffer));
        for (std::size_t m = 0; m < streams.size(); ++m) {
            if (!streams[m].hidden) continue;
            const MatrixF quant = streams[m].head->finalLogits(streams[m].hidden->sequence(i, buffer));
            kl[m].add(base.topRows(rows), quant.topRows(rows), targets);
        }
    }
    return kl;
}

}  // namespace qs::pipeline
