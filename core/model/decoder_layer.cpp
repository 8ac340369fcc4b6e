#include "qs/model/decoder_layer.h"

#include <array>
#include <cmath>
#include <initializer_list>
#include <numbers>
#include <string>
#include <vector>

#include "qs/architectures/module_names.h"
#include "qs/model/expert_activation.h"
#include "qs/model/moe_routing.h"
#include "qs/model/rms_norm.h"

#include "decoder_layer_support.h"

namespace qs::model {

namespace modules = architectures::modules;
namespace {

using detail::engineInput;
using detail::hooked;
using detail::math;
using detail::notify;

constexpr std::array<std::string_view, 3> kQkv{modules::kQProj, modules::kKProj, modules::kVProj};
constexpr std::array<std::string_view, 1> kO{modules::kOProj};
constexpr std::array<std::string_view, 2> kGateUp{modules::kGateProj, modules::kUpProj};
constexpr std::array<std::string_view, 1> kDown{modules::kDownProj};

// All-expert calibration: every expert's gate and up read the block's input, shown to the hook once
// (one Hessian for all of them, not one per expert) with each module's routed tokens.
void notifyExpertsInput(const DecoderLayerContext& c, const LayerWeights& w, const MatrixF& normed,
                        const ExpertRouting& routing) {
    std::vector<std::string> names;
    std::vector<std::int64_t> routed;
    for (std::size_t e = 0; e < w.experts.size(); ++e) {
        const std::string prefix = w.moeNames.expert(static_cast<int>(e));
        const auto tokens = static_cast<std::int64_t>(routing.tokens[e].size());
        names.push_back(prefix + w.moeNames.gate);
        routed.push_back(tokens);
        if (w.moeNames.fusedGateUp()) continue;  // gpt-oss's gate_up_proj is one linear
        names.push_back(prefix + w.moeNames.up);
        routed.push_back(tokens);
    }
    const std::vector<std::string_view> modules(names.begin(), names.end());
    (*c.hook)(LinearInput{c.layer, modules, normed, -1, routed});
}

// [q_h | gate_h] per head -> q [T, heads · dim] and gate [T, heads · dim] (transformers' view(..., head_dim * 2)
// and chunk).
void splitQueryAndGate(MatrixF& q, MatrixF& gate, int heads, int dim) {
    MatrixF query(q.rows(), static_cast<Eigen::Index>(heads) * dim);
    gate.resize(q.rows(), static_cast<Eigen::Index>(heads) * dim);
    for (int h = 0; h < heads; ++h) {
        query.middleCols(static_cast<Eigen::Index>(h) * dim, dim) =
            q.middleCols(2 * static_cast<Eigen::Index>(h) * dim, dim);
        gate.middleCols(static_cast<Eigen::Index>(h) * dim, dim) =
            q.middleCols((2 * static_cast<Eigen::Index>(h) + 1) * dim, dim);
    }
    q = std::move(query);
}

MatrixF attentionBlock(const LayerWeights& w, const MatrixF& normed, const DecoderLayerContext& c) {
    const ModelConfig& cfg = c.config;
    notify(c, kQkv, normed);
    const LayerMath& m = math(c);
    const std::array<const Linear*, 3> qkv{&w.q, &w.k, &w.v};
    MatrixF quantized;
    std::vector<MatrixF> projected = m.linears(engineInput(normed, {&w.q, &w.k, &w.v}, quantized), qkv);
    MatrixF& q = projected[0];
    MatrixF& k = projected[1];
    MatrixF& v = projected[2];
    // Qwen3.5's gated attention: q_proj gives each head its query, then as many output-gate logits.
    MatrixF outputGate;
    if (q.cols() == 2 * cfg.qDim()) splitQueryAndGate(q, outputGate, cfg.numHeads, cfg.headDim);
    if (w.qNorm.size() > 0) rmsNormHeadsInPlace(q, w.qNorm, cfg.rmsNormEps, cfg.arch.normOffset);
    if (w.kNorm.size() > 0) rmsNormHeadsInPlace(k, w.kNorm, cfg.rmsNormEps, cfg.arch.normOffset);
    int chunk = 0;
    if (cfg.llama4.active()) {
        chunk = detail::llama4QueryKey(q, k, c);  // Llama 4: its RoPE / NoPE layers
    } else {
        c.rope.apply(q, cfg.numHeads, c.firstPosition);
        c.rope.apply(k, cfg.numKvHeads, c.firstPosition);
    }
    // query_pre_attn_scalar replaces head_dim in the score scale: the queries carry the ratio, so that
    // attention (on any LayerMath) keeps its 1/sqrt(head_dim).
    if (cfg.queryPreAttnScalar > 0.0 && cfg.queryPreAttnScalar != cfg.headDim)
        q *= static_cast<float>(std::sqrt(static_cast<double>(cfg.headDim) / cfg.queryPreAttnScalar));
    if (c.keyValueHook && *c.keyValueHook) (*c.keyValueHook)(KeyValues{c.layer, k, v});
    if (w.k.cacheScale > 0.0f) quant::fakeQuantizeFp8(k, w.k.cacheScale);
    if (w.v.cacheScale > 0.0f) quant::fakeQuantizeFp8(v, w.v.cacheScale);

    const AttentionShape shape{
        cfg.numHeads, cfg.numKvHeads, cfg.headDim, cfg.windowOf(c.layer), w.sinks.size() > 0 ? w.sinks.data() : nullptr,
        chunk};
    MatrixF context;
    if (c.cache) {
        c.cache->append(c.layer, k, v);
        context = m.attention(q, c.cache->keys(c.layer), c.cache->values(c.layer), shape);
    } else {
        context = m.attention(q, k, v, shape);
    }
    if (cfg.attentionOutputGate && outputGate.size() > 0)
        context.array() *= outputGate.array().unaryExpr([](float x) { return 1.0f / (1.0f + std::exp(-x)); });
    notify(c, kO, context);
    MatrixF quantizedContext;
    return m.linear(engineInput(context, {&w.o}, quantizedContext), w.o);
}

// act(x Gᵀ) ⊙ (x Uᵀ): SiLU on the LayerMath (a device fuses it), gelu-tanh on the host after its GEMMs.
MatrixF gatedProduct(const LayerMath& m, const MatrixF& x, const Linear& gate, const Linear& up,
                     Activation activation) {
    if (activation == Activation::Silu) return m.gatedProduct(x, gate, up);
    MatrixF g = m.linear(x, gate);
    const MatrixF u = m.linear(x, up);
    // torch's gelu(approximate="tanh"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))), in f32.
    const float k = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
    g.array() = 0.5f * g.array() * (1.0f + (k * (g.array() + 0.044715f * g.array().cube())).tanh()) * u.array();
    return g;
}

// A gated MLP: the layer's own (`gateUp` and `down` name its linears for the hook), or a MoE block's
// shared expert.
MatrixF gatedMlp(const Linear& gate, const Linear& up, const Linear& down, std::span<const std::string_view> gateUp,
                 std::span<const std::string_view> downName, const MatrixF& normed, const DecoderLayerContext& c) {
    notify(c, gateUp, normed);
    const LayerMath& m = math(c);
    MatrixF quantized;
    const MatrixF product =
        gatedProduct(m, engineInput(normed, {&gate, &up}, quantized), gate, up, c.config.arch.activation);
    notify(c, downName, product);
    if (c.outputUnread) return {};
    MatrixF quantizedProduct;
    return m.linear(engineInput(product, {&down}, quantizedProduct), down);
}

MatrixF mlpBlock(const LayerWeights& w, const MatrixF& normed, const DecoderLayerContext& c) {
    return gatedMlp(w.gate, w.up, w.down, kGateUp, kDown, normed, c);
}

// GLM's shared expert: a SwiGLU MLP under "<block>.<shared>." that every token runs through.
MatrixF sharedExpertBlock(const LayerWeights& w, const MatrixF& normed, const DecoderLayerContext& c) {
    const std::string prefix = w.moeNames.sharedExpert();
    const std::array<std::string, 3> names{prefix + w.moeNames.gate, prefix + w.moeNames.up, prefix + w.moeNames.down};
    const std::array<std::string_view, 2> gateUp{names[0], names[1]};
    const std::array<std::string_view, 1> down{names[2]};
    const Expert& x = w.sharedExpert;
    return gatedMlp(x.gate, x.up, x.down, gateUp, down, normed, c);
}

// The input of an expert's gate and up projections as the engine reads it (gpt-oss: one fused linear).
const MatrixF& expertInput(const MatrixF& x, const Expert& e, MatrixF& storage) {
    return e.up.weight.size() == 0 ? engineInput(x, {&e.gate}, storage) : engineInput(x, {&e.gate, &e.up}, storage);
}

// The input of an expert's down projection: the gated product of its gate and up projections.
MatrixF expertProduct(const LayerMath& m, const MatrixF& x, const Expert& e, const MoeConfig& moe) {
    if (moe.activation == ExpertActivation::ClampedSwiglu)  // gpt-oss: gate_up_proj fused, or (read from GGUF) apart
        return e.up.weight.size() == 0
                   ? clampedSwiglu(m.linear(x, e.gate), moe.swigluLimit, moe.swigluAlpha)
                   : clampedSwiglu(m.linear(x, e.gate), m.linear(x, e.up), moe.swigluLimit, moe.swigluAlpha);
    return m.gatedProduct(x, e.gate, e.up);
}

// The sparse MoE block: each expert runs on the rows routed to it, and its output is added to those
// rows with the routing weight (an expert no token chose is skipped, as transformers skips it). The
// hook sees each expert's gate/up input and down input: the rows that expert saw, or with
// hookSeesAllTokens every row (the block's input once for every gate/up; each expert then runs once
// more, on all of them, for its down input).
MatrixF moeBlock(const LayerWeights& w, const MatrixF& normed, const DecoderLayerContext& c) {
    const MoeConfig& moe = c.config.moe;
    const LayerMath& m = math(c);
    const ExpertRouting routing = routeTokens(m.linear(normed, w.router), moe, w.routerScoreBias);
    const bool scalesInput = moe.scoring == RouterScoring::SigmoidScalesInput;
    MatrixF out = MatrixF::Zero(normed.rows(), normed.cols());
    if (c.hookSeesAllTokens && hooked(c)) notifyExpertsInput(c, w, normed, routing);
    for (std::size_t e = 0; e < w.experts.size(); ++e) {
        const auto& rows = routing.tokens[e];
        const Expert& x = w.experts[e];
        const std::string prefix = w.moeNames.expert(static_cast<int>(e));
        const std::array<std::string, 3> names{prefix + w.moeNames.gate, prefix + w.moeNames.up,
                                               prefix + w.moeNames.down};
        const std::array<std::string_view, 2> gateUpNames{names[0], names[1]};
        // gpt-oss's gate_up_proj is one linear: its input is announced under that one name.
        const std::span<const std::string_view> gateUp(gateUpNames.data(), w.moeNames.fusedGateUp() ? 1 : 2);
        const std::array<std::string_view, 1> down{names[2]};
        const auto routedCount = static_cast<std::int64_t>(rows.size());
        if (c.hookSeesAllTokens && hooked(c)) {
            MatrixF quantized;
            notify(c, down, expertProduct(m, expertInput(normed, x, quantized), x, moe), routedCount);
            if (c.outputUnread) continue;  // the hook has seen this expert's inputs: its routed run only adds output
        }
        if (rows.empty()) {
            if (!c.hookSeesAllTokens) {  // still reported: calibration must see that this expert got no token
                notify(c, gateUp, MatrixF(0, normed.cols()), 0);
                notify(c, down, MatrixF(0, x.down.weight.cols()), 0);
            }
            continue;
        }
        MatrixF routed(static_cast<Eigen::Index>(rows.size()), normed.cols());
        for (std::size_t i = 0; i < rows.size(); ++i) routed.row(static_cast<Eigen::Index>(i)) = normed.row(rows[i]);
        if (scalesInput)  // Llama 4: the expert reads its input times the router's weight, and adds its output
            for (std::size_t i = 0; i < rows.size(); ++i)
                routed.row(static_cast<Eigen::Index>(i)) *= routing.weights[e][i];
        if (!c.hookSeesAllTokens) notify(c, gateUp, routed, routedCount);
        MatrixF quantized;
        const MatrixF product = expertProduct(m, expertInput(routed, x, quantized), x, moe);
        if (!c.hookSeesAllTokens) notify(c, down, product, routedCount);
        if (c.outputUnread) continue;
        MatrixF quantizedProduct;
        const MatrixF y = m.linear(engineInput(product, {&x.down}, quantizedProduct), x.down);
        for (std::size_t i = 0; i < rows.size(); ++i)
            out.row(rows[i]) += (scalesInput ? 1.0f : routing.weights[e][i]) * y.row(static_cast<Eigen::Index>(i));
    }
    if (w.hasSharedExpert()) {
        MatrixF shared = sharedExpertBlock(w, normed, c);
        if (c.outputUnread) return out;
        // Qwen3.5-MoE: the shared expert's output scaled by sigmoid(shared_expert_gate(x)), one per token.
        if (w.sharedExpertGate.weight.size() > 0) {
            const MatrixF gate = m.linear(normed, w.sharedExpertGate);
            for (Eigen::Index i = 0; i < shared.rows(); ++i) shared.row(i) *= 1.0f / (1.0f + std::exp(-gate(i, 0)));
        }
        out += shared;
    }
    return out;
}

}  // namespace

void runDecoderLayer(const LayerWeights& weights, MatrixF& hidden, const DecoderLayerContext& context) {
    const double eps = context.config.rmsNormEps;
    const float offset = context.config.arch.normOffset;
    const MatrixF normedInput = rmsNorm(hidden, weights.inputNorm, eps, offset);
    MatrixF attended = weights.isDeltaNet() ? detail::gatedDeltaNetBlock(weights, normedInput, context)
                       : weights.isLatent() ? detail::latentAttentionBlock(weights, normedInput, context)
                                            : attentionBlock(weights, normedInput, context);
    // Gemma's sandwich norms normalise each sub-block's output before it joins the residual stream.
    if (weights.attentionOutputNorm.size() > 0) rmsNormInPlace(attended, weights.attentionOutputNorm, eps, offset);
    hidden += attended;
    const MatrixF normed = rmsNorm(hidden, weights.postAttentionNorm, eps, offset);
    MatrixF mlp = weights.isMoe() ? moeBlock(weights, normed, context) : mlpBlock(weights, normed, context);
    if (context.outputUnread) return;  // the MLP ran for its hook only
    if (weights.mlpOutputNorm.size() > 0) rmsNormInPlace(mlp, weights.mlpOutputNorm, eps, offset);
    hidden += mlp;
}

}  // namespace qs::model
