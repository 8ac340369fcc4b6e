// Llama 4's queries and keys before attention (ModelConfig::Llama4Attention; transformers' Llama4TextAttention):
//   RoPE layer:  q, k rotated as complex pairs (2i, 2i + 1) with inv_freq[i], then each head L2-normalised
//                (x * rsqrt(mean(x^2) + eps), no weight) when use_qk_norm; attention chunked.
//   NoPE layer:  no rotation, no norm; q at position p times log1p(floor((p + 1) / floor_scale)) * attn_scale + 1
//                when attn_temperature_tuning; full causal attention.
// The pairs are taken apart first (element 2i to i, 2i + 1 to d/2 + i) so that the rotate_half RoPE rotates
// them: q and k move alike, which leaves every score q.k, the L2 norm and the attention's output unchanged.
#include <cmath>

#include "qs/model/latent_attention.h"

#include "decoder_layer_support.h"

namespace qs::model::detail {

namespace {

void l2NormHeads(MatrixF& x, int heads, int dim, double eps) {
    for (Eigen::Index t = 0; t < x.rows(); ++t)
        for (int h = 0; h < heads; ++h) {
            auto head = x.row(t).segment(static_cast<Eigen::Index>(h) * dim, dim);
            const float meanSquare = head.squaredNorm() / static_cast<float>(dim);
            head *= 1.0f / std::sqrt(meanSquare + static_cast<float>(eps));
        }
}

}  // namespace

float llama4QueryTemperature(const Llama4Attention& a, int position) {
    return static_cast<float>(std::log1p(std::floor((position + 1.0) / a.floorScale)) * a.attnScale + 1.0);
}

int llama4QueryKey(MatrixF& q, MatrixF& k, const DecoderLayerContext& c) {
    const ModelConfig& cfg = c.config;
    const Llama4Attention& a = cfg.llama4;
    const auto layer = static_cast<std::size_t>(c.layer);
    if (a.rope.at(layer)) {
        deinterleavePairs(q, cfg.numHeads, cfg.headDim);
        deinterleavePairs(k, cfg.numKvHeads, cfg.headDim);
        c.rope.apply(q, cfg.numHeads, c.firstPosition);
        c.rope.apply(k, cfg.numKvHeads, c.firstPosition);
        if (a.l2QkNorm) {
            l2NormHeads(q, cfg.numHeads, cfg.headDim, cfg.rmsNormEps);
            l2NormHeads(k, cfg.numKvHeads, cfg.headDim, cfg.rmsNormEps);
        }
    } else if (a.temperatureTuning) {
        for (Eigen::Index t = 0; t < q.rows(); ++t)
            q.row(t) *= llama4QueryTemperature(a, c.firstPosition + static_cast<int>(t));
    }
    return a.chunked.at(layer) ? a.chunkSize : 0;
}

}  // namespace qs::model::detail
