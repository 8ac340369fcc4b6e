// Qwen3.5's Gated DeltaNet (gated_delta_net.h): the maths and the decoder layer's linear-attention block.
#include "qs/model/gated_delta_net.h"

#include <array>
#include <cmath>
#include <string>

#include "qs/architectures/module_names.h"
#include "qs/error.h"

#include "decoder_layer_support.h"

namespace qs::model {

namespace modules = architectures::modules;

namespace {

float silu(float x) { return x / (1.0f + std::exp(-x)); }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

MatrixF causalConvSilu(const MatrixF& x, const MatrixF& weight, MatrixF* history) {
    const Eigen::Index t = x.rows(), channels = x.cols(), kernel = weight.cols();
    if (weight.rows() != channels)
        throw Error("conv1d: weight has " + std::to_string(weight.rows()) + " channels, input " +
                    std::to_string(channels));
    const Eigen::Index past = kernel - 1;
    MatrixF extended = MatrixF::Zero(past + t, channels);
    if (history != nullptr && history->size() > 0) {
        if (history->rows() != past || history->cols() != channels) throw Error("conv1d: history has the wrong shape");
        extended.topRows(past) = *history;
    }
    extended.bottomRows(t) = x;
    MatrixF out(t, channels);
    for (Eigen::Index i = 0; i < t; ++i)
        for (Eigen::Index c = 0; c < channels; ++c) {
            float sum = 0.0f;
            for (Eigen::Index j = 0; j < kernel; ++j) sum += weight(c, j) * extended(i + j, c);
            out(i, c) = silu(sum);
        }
    if (history != nullptr) *history = extended.bottomRows(past);
    return out;
}

void l2NormalizeHeadsInPlace(MatrixF& x, int dim, float eps) {
    const Eigen::Index heads = x.cols() / dim;
    for (Eigen::Index r = 0; r < x.rows(); ++r)
        for (Eigen::Index h = 0; h < heads; ++h) {
            auto head = x.row(r).segment(h * dim, dim);
            float sum = 0.0f;
            for (Eigen::Index i = 0; i < dim; ++i) sum += head(i) * head(i);
            head *= 1.0f / std::sqrt(sum + eps);
        }
}

MatrixF gatedDeltaRule(const MatrixF& q, const MatrixF& k, const MatrixF& v, const MatrixF& g, const MatrixF& beta,
                       int keyHeads, int valueHeads, std::vector<MatrixF>* state) {
    const Eigen::Index t = q.rows();
    const int dk = static_cast<int>(q.cols() / keyHeads), dv = static_cast<int>(v.cols() / valueHeads);
    if (keyHeads < 1 || valueHeads % keyHeads != 0 || k.cols() != q.cols() || k.rows() != t || v.rows() != t ||
        g.rows() != t || beta.rows() != t || g.cols() != valueHeads || beta.cols() != valueHeads)
        throw Error("gated delta rule: inconsistent shapes");
    const int group = valueHeads / keyHeads;
    std::vector<MatrixF> local;
    std::vector<MatrixF>& s = state != nullptr ? *state : local;
    if (s.empty()) s.assign(static_cast<std::size_t>(valueHeads), MatrixF::Zero(dk, dv));
    if (static_cast<int>(s.size()) != valueHeads) throw Error("gated delta rule: the state has the wrong head count");
    MatrixF out(t, v.cols());
    // The heads are independent: each runs on one thread, in the same order whatever the team's size.
#pragma omp parallel for schedule(dynamic, 1) if (t * valueHeads * dk * dv > 65536)
    for (int h = 0; h < valueHeads; ++h) {
        VectorF memory(dv), delta(dv);
        MatrixF& S = s[static_cast<std::size_t>(h)];
        const int kh = h / group;
        for (Eigen::Index i = 0; i < t; ++i) {
            const auto qt = q.row(i).segment(kh * dk, dk);
            const auto kt = k.row(i).segment(kh * dk, dk);
            const auto vt = v.row(i).segment(h * dv, dv);
            S *= std::exp(g(i, h));
            // memory = Sᵀ k, delta = β (v − memory), S += k deltaᵀ, o = Sᵀ q: plain loops, a fixed order.
            for (int b = 0; b < dv; ++b) {
                float m = 0.0f;
                for (int a = 0; a < dk; ++a) m += S(a, b) * kt(a);
                memory(b) = m;
            }
            for (int b = 0; b < dv; ++b) delta(b) = (vt(b) - memory(b)) * beta(i, h);
            for (int a = 0; a < dk; ++a)
                for (int b = 0; b < dv; ++b) S(a, b) += kt(a) * delta(b);
            for (int b = 0; b < dv; ++b) {
                float o = 0.0f;
                for (int a = 0; a < dk; ++a) o += S(a, b) * qt(a);
                out(i, h * dv + b) = o;
            }
        }
    }
    return out;
}

namespace detail {

MatrixF gatedDeltaNetBlock(const LayerWeights& w, const MatrixF& normed, const DecoderLayerContext& c) {
    const LinearAttentionConfig& la = c.config.linearAttention;
    const DeltaNetWeights& d = w.deltaNet;
    const LayerMath& m = math(c);
    constexpr std::array<std::string_view, 2> kInputs{modules::kInProjQkv, modules::kInProjZ};
    constexpr std::array<std::string_view, 1> kOut{modules::kDeltaOutProj};
    notify(c, kInputs, normed);
    MatrixF quantized;
    const bool gated = d.inProjZ.weight.size() > 0;
    const MatrixF& input = gated ? engineInput(normed, {&d.inProjQkv, &d.inProjZ}, quantized)
                                 : engineInput(normed, {&d.inProjQkv}, quantized);
    MatrixF mixed = m.linear(input, d.inProjQkv);
    const MatrixF z = gated ? m.linear(input, d.inProjZ) : MatrixF();
    // in_proj_b / in_proj_a are kept dense (as a router): they read the block's input unquantized.
    const MatrixF b = m.linear(normed, d.inProjB);
    const MatrixF a = m.linear(normed, d.inProjA);

    DeltaNetState* cached = c.cache != nullptr ? &c.cache->deltaNetState(c.layer) : nullptr;
    if (d.conv.size() > 0) {
        mixed = causalConvSilu(mixed, d.conv, cached != nullptr ? &cached->convHistory : nullptr);
    } else {
        mixed = mixed.unaryExpr([](float x) { return silu(x); });
    }
    const int kd = la.keyDim(), hv = la.numValueHeads;
    MatrixF q = mixed.leftCols(kd), k = mixed.middleCols(kd, kd);
    const MatrixF v = mixed.rightCols(la.valueDim());
    l2NormalizeHeadsInPlace(q, la.keyHeadDim);
    l2NormalizeHeadsInPlace(k, la.keyHeadDim);
    q *= 1.0f / std::sqrt(static_cast<float>(la.keyHeadDim));
    MatrixF g(normed.rows(), hv), beta(normed.rows(), hv);
    for (Eigen::Index i = 0; i < normed.rows(); ++i)
        for (int h = 0; h < hv; ++h) {
            beta(i, h) = sigmoid(b(i, h));
            g(i, h) = -std::exp(d.aLog(h)) * softplus(a(i, h) + d.dtBias(h));
        }
    MatrixF o = gatedDeltaRule(q, k, v, g, beta, la.numKeyHeads, hv, cached != nullptr ? &cached->heads : nullptr);
    if (c.cache != nullptr) c.cache->advance(c.layer, static_cast<int>(normed.rows()));

    // The gated RMSNorm of each value head (Qwen3_5RMSNormGated: norm, then weight, then · silu(z)).
    const int dv = la.valueHeadDim;
    const auto eps = static_cast<float>(c.config.rmsNormEps);
    for (Eigen::Index i = 0; i < o.rows(); ++i)
        for (int h = 0; h < hv; ++h) {
            auto head = o.row(i).segment(h * dv, dv);
            float sum = 0.0f;
            for (int j = 0; j < dv; ++j) sum += head(j) * head(j);
            const float inv = 1.0f / std::sqrt(sum / static_cast<float>(dv) + eps);
            for (int j = 0; j < dv; ++j) {
                float y = head(j) * inv * d.norm(j);
                if (gated) y *= silu(z(i, h * dv + j));
                head(j) = y;
            }
        }
    notify(c, kOut, o);
    MatrixF quantizedOut;
    return m.linear(engineInput(o, {&d.outProj}, quantizedOut), d.outProj);
}

}  // namespace detail

}  // namespace qs::model
