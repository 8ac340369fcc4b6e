// DeepSeek-V3's multi-head latent attention (transformers' DeepseekV3Attention, eager), per layer:
//   q = q_b(rms(q_a(x))) or q_proj(x), per head [q_nope | q_rot]
//   [c | k_rot] = kv_a(x), per head [k_nope | v] = kv_b(rms(c)); k_rot is one head every head shares
//   q_rot, k_rot rotated (interleaved pairs, or rotate_half); k = [k_nope | k_rot]
//   softmax(q kᵀ · (nope + rope)^-1/2 · mscale²) v, o_proj
// Values are v_head_dim wide, queries and keys nope + rope. The attention of every LayerMath takes one head
// width, so each value head is padded with zeros to the query width and the padding dropped after: the
// zero columns add nothing to any score and come out zero, so the result is the unpadded attention's (as
// transformers itself pads for flash attention), and a device keeps running it.
#include "qs/model/latent_attention.h"

#include <array>
#include <cmath>
#include <string_view>

#include "qs/architectures/module_names.h"
#include "qs/error.h"
#include "qs/model/rms_norm.h"
#include "qs/model/rope.h"

#include "decoder_layer_support.h"

namespace qs::model {

namespace modules = architectures::modules;

double latentScoreFactor(const RopeScaling& r) {
    if (r.type == RopeScalingType::None || r.mscaleAllDim == 0.0) return 1.0;
    const double mscale = yarnMscale(r.factor, r.mscaleAllDim);
    return mscale * mscale;
}

void deinterleavePairs(MatrixF& x, int heads, int dim) {
    if (x.cols() != static_cast<Eigen::Index>(heads) * dim || dim % 2 != 0)
        throw Error("latent attention: " + std::to_string(x.cols()) + " columns are not " + std::to_string(heads) +
                    " heads of an even " + std::to_string(dim));
    const int half = dim / 2;
    VectorF head(dim);
    for (Eigen::Index t = 0; t < x.rows(); ++t)
        for (int h = 0; h < heads; ++h) {
            float* row = x.row(t).data() + static_cast<std::ptrdiff_t>(h) * dim;
            for (int i = 0; i < half; ++i) {
                head[i] = row[2 * i];
                head[half + i] = row[2 * i + 1];
            }
            std::copy(head.data(), head.data() + dim, row);
        }
}

namespace detail {
namespace {

// Columns [offset, offset + width) of each of the `heads` blocks of `stride` columns of x, side by side.
MatrixF headParts(const MatrixF& x, int heads, int stride, int offset, int width) {
    MatrixF out(x.rows(), static_cast<Eigen::Index>(heads) * width);
    for (int h = 0; h < heads; ++h)
        out.middleCols(static_cast<Eigen::Index>(h) * width, width) =
            x.middleCols(static_cast<Eigen::Index>(h) * stride + offset, width);
    return out;
}

// The inverse: part h of `parts` written into columns [offset, offset + width) of block h of x.
void setHeadParts(MatrixF& x, const MatrixF& parts, int heads, int stride, int offset, int width) {
    for (int h = 0; h < heads; ++h)
        x.middleCols(static_cast<Eigen::Index>(h) * stride + offset, width) =
            parts.middleCols(static_cast<Eigen::Index>(h) * width, width);
}

// RoPE on the rotary parts `rot` [T, heads * rope] as the config lays their pairs out.
void rotate(MatrixF& rot, int heads, const DecoderLayerContext& c) {
    if (c.config.mla.ropeInterleave) deinterleavePairs(rot, heads, c.config.mla.qkRopeHeadDim);
    c.rope.apply(rot, heads, c.firstPosition);
}

// The queries, [T, heads * (nope + rope)], unrotated: q_proj's output, or q_b_proj's of the normed q_a_proj
// output (the hook sees q_b_proj's input).
MatrixF queries(const LayerWeights& w, MatrixF projected, const DecoderLayerContext& c) {
    if (w.attention != AttentionLayout::LatentLowRankQuery) return projected;
    if (w.qANorm.size() > 0) rmsNormInPlace(projected, w.qANorm, kLatentNormEps);
    static constexpr std::array<std::string_view, 1> kQB{modules::kQBProj};
    notify(c, kQB, projected);
    MatrixF quantized;
    return math(c).linear(engineInput(projected, {&w.qB}, quantized), w.qB);
}

}  // namespace

MatrixF latentAttentionBlock(const LayerWeights& w, const MatrixF& normed, const DecoderLayerContext& c) {
    const ModelConfig& cfg = c.config;
    const LatentAttention& a = cfg.mla;
    const int heads = cfg.numHeads, nope = a.qkNopeHeadDim, rope = a.qkRopeHeadDim, qk = a.qkHeadDim(),
              vDim = a.vHeadDim;
    const LayerMath& m = math(c);
    const bool lowRankQuery = w.attention == AttentionLayout::LatentLowRankQuery;
    const Linear& qIn = lowRankQuery ? w.qA : w.q;
    const std::array<std::string_view, 2> fromNormed{lowRankQuery ? modules::kQAProj : modules::kQProj,
                                                     modules::kKvAProj};
    notify(c, fromNormed, normed);
    const std::array<const Linear*, 2> first{&qIn, &w.kvA};
    MatrixF quantized;
    std::vector<MatrixF> projected = m.linears(engineInput(normed, {&qIn, &w.kvA}, quantized), first);
    MatrixF q = queries(w, std::move(projected[0]), c);

    // The latent [T, kv_lora_rank] through its norm and kv_b_proj; the rotary key beside it.
    MatrixF latent = projected[1].leftCols(a.kvLoraRank);
    MatrixF kRot = projected[1].rightCols(rope);
    if (w.kvANorm.size() > 0) rmsNormInPlace(latent, w.kvANorm, kLatentNormEps);
    static constexpr std::array<std::string_view, 1> kKvB{modules::kKvBProj};
    notify(c, kKvB, latent);
    MatrixF quantizedLatent;
    const MatrixF kv = m.linear(engineInput(latent, {&w.kvB}, quantizedLatent), w.kvB);

    MatrixF qRot = headParts(q, heads, qk, nope, rope);
    rotate(qRot, heads, c);
    rotate(kRot, 1, c);
    setHeadParts(q, qRot, heads, qk, nope, rope);
    q *= static_cast<float>(a.scoreFactor);  // attention applies (nope + rope)^-1/2 itself

    MatrixF k(normed.rows(), static_cast<Eigen::Index>(heads) * qk);
    MatrixF v = MatrixF::Zero(normed.rows(), static_cast<Eigen::Index>(heads) * qk);  // padded to qk
    setHeadParts(k, headParts(kv, heads, nope + vDim, 0, nope), heads, qk, 0, nope);
    for (int h = 0; h < heads; ++h) k.middleCols(static_cast<Eigen::Index>(h) * qk + nope, rope) = kRot;
    setHeadParts(v, headParts(kv, heads, nope + vDim, nope, vDim), heads, qk, 0, vDim);

    const AttentionShape shape{heads, heads, qk, cfg.windowOf(c.layer), nullptr};
    MatrixF padded;
    if (c.cache) {
        c.cache->append(c.layer, k, v);
        padded = m.attention(q, c.cache->keys(c.layer), c.cache->values(c.layer), shape);
    } else {
        padded = m.attention(q, k, v, shape);
    }
    const MatrixF context = headParts(padded, heads, qk, 0, vDim);
    static constexpr std::array<std::string_view, 1> kO{modules::kOProj};
    notify(c, kO, context);
    MatrixF quantizedContext;
    return m.linear(engineInput(context, {&w.o}, quantizedContext), w.o);
}

}  // namespace detail
}  // namespace qs::model
