#include "qs/model/checkpoint_weights.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "qs/architectures/module_names.h"
#include "qs/error.h"
#include "qs/finite_weights.h"
#include "qs/io/dtype.h"
#include "qs/io/shape_text.h"
#include "qs/model/attention_linears.h"

namespace qs::model {

namespace modules = architectures::modules;
namespace {

using io::shapeText;

// Converts (or decodes) rows [begin, end) of a rank-2 tensor to f32 without touching the other rows.
MatrixF convertRows(const io::TensorView& t, std::int64_t begin, std::int64_t end) {
    const std::int64_t cols = t.shape()[1];
    MatrixF out(end - begin, cols);
    t.decode(static_cast<std::size_t>(begin * cols), static_cast<std::size_t>((end - begin) * cols), out.data());
    return out;
}

}  // namespace

CheckpointWeights::CheckpointWeights(io::Checkpoint checkpoint, ModelConfig config, Options options)
    : checkpoint_(std::move(checkpoint)), config_(std::move(config)), options_(options) {
    // HF ties lm_head to the embedding when configured so, even when a copy of lm_head was saved.
    lmHeadName_ = config_.tieWordEmbeddings ? embeddingName() : config_.arch.lmHead;
    validate();
}

io::TensorView CheckpointWeights::checked(const std::string& name, std::vector<std::int64_t> shape) const {
    const io::TensorView t = checkpoint_.tensor(name);
    if (!t.info().decodesToF32())
        throw Error(checkpoint_.root().string() + ": tensor " + name + " has dtype " + t.info().typeName() +
                    "; a dense float checkpoint is needed (decode quantized layers through formats first)");
    if (t.shape() != shape)
        throw Error(checkpoint_.root().string() + ": tensor " + name + " has shape " + shapeText(t.shape()) +
                    ", the config implies " + shapeText(shape));
    return t;
}

void CheckpointWeights::validate() const {
    const std::int64_t h = config_.hiddenSize;
    checked(embeddingName(), {config_.vocabSize, h});
    if (options_.lmHead) checked(lmHeadName_, {config_.vocabSize, h});
    checked(config_.arch.tensorPrefix + "norm.weight", {h});
    if (!options_.linears) return;
    for (int i = 0; i < config_.numLayers; ++i) {
        const std::string p = config_.layerPrefix(i);
        for (const FusedProjection& f : config_.fusedProjections()) {
            std::int64_t rows = 0;
            for (const auto& part : f.parts) rows += part.second;
            checked(p + f.fused + ".weight", {rows, h});
        }
        for (const LinearShape& l : attentionLinears(config_, i))
            if (!isFusedPart(l.module)) checked(p + l.module + ".weight", {l.out, l.in});
        if (config_.isLinearAttentionLayer(i)) {
            const LinearAttentionConfig& la = config_.linearAttention;
            checked(p + modules::kInProjB + ".weight", {la.numValueHeads, h});
            checked(p + modules::kInProjA + ".weight", {la.numValueHeads, h});
            checked(p + modules::kDeltaConv + ".weight", {la.convDim(), 1, la.convKernel});
        }
        if (config_.arch.attentionSinks) checked(p + modules::kSinks, {config_.numHeads});
        if (config_.isMoeLayer(i)) {
            validateExperts(i);
            continue;
        }
        if (config_.arch.fusedGateUp.empty()) {
            checked(p + modules::kGateProj + ".weight", {config_.intermediateSize, h});
            checked(p + modules::kUpProj + ".weight", {config_.intermediateSize, h});
        }
        checked(p + modules::kDownProj + ".weight", {h, config_.intermediateSize});
    }
}

// The router and every expert with the shapes the config implies, and no expert beyond the config's
// count: a checkpoint with more experts than num_experts says would otherwise run silently wrong.
void CheckpointWeights::validateExperts(int layer) const {
    const MoeConfig& moe = config_.moe;
    const std::int64_t h = config_.hiddenSize, ff = moe.expertIntermediateSize;
    const std::string p = config_.layerPrefix(layer);
    const io::TensorView router = checkpoint_.tensor(p + moe.names.router() + ".weight");
    if (router.shape().size() == 2 && router.shape()[1] == h && router.shape()[0] != moe.numExperts)
        throw Error(checkpoint_.root().string() + ": tensor " + p + moe.names.router() + ".weight routes to " +
                    std::to_string(router.shape()[0]) + " experts, but the config says " +
                    std::to_string(moe.numExperts));
    checked(p + moe.names.router() + ".weight", {moe.numExperts, h});
    if (moe.sharedExpertGate) checked(p + moe.names.sharedExpertGate() + ".weight", {1, h});
    if (checkpoint_.find(p + moe.names.routerScoreBias())) checked(p + moe.names.routerScoreBias(), {moe.numExperts});
    if (moe.sharedExpertIntermediateSize > 0) {
        const std::string x = p + moe.names.sharedExpert();
        const std::int64_t shared = moe.sharedExpertIntermediateSize;
        checked(x + moe.names.gate + ".weight", {shared, h});
        checked(x + moe.names.up + ".weight", {shared, h});
        checked(x + moe.names.down + ".weight", {h, shared});
    }
    if (moe.stackedExperts) {
        const std::string x = p + moe.names.experts();
        checked(x + moe.names.gate, {moe.numExperts, h, 2 * ff});
        checked(x + moe.names.gate + "_bias", {moe.numExperts, 2 * ff});
        checked(x + moe.names.down, {moe.numExperts, ff, h});
        checked(x + moe.names.down + "_bias", {moe.numExperts, h});
        return;
    }
    for (int e = 0; e < moe.numExperts; ++e) {
        const std::string x = p + moe.names.expert(e);
        if (!checkpoint_.find(x + moe.names.gate + ".weight"))
            throw Error(checkpoint_.root().string() + ": expert " + std::to_string(e) + " of layer " +
                        std::to_string(layer) + " is missing (no tensor " + x + moe.names.gate +
                        ".weight; the config has " + std::to_string(moe.numExperts) + " experts)");
        checked(x + moe.names.gate + ".weight", {ff, h});
        checked(x + moe.names.up + ".weight", {ff, h});
        checked(x + moe.names.down + ".weight", {h, ff});
    }
    const std::string experts = p + moe.names.experts();
    for (const io::CheckpointTensor& t : checkpoint_.tensors()) {
        const std::string& name = t.info->name;
        if (!name.starts_with(experts)) continue;
        const std::string index = name.substr(experts.size(), name.find('.', experts.size()) - experts.size());
        if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos || index.size() > 6 ||
            std::stoi(index) >= moe.numExperts)
            throw Error(checkpoint_.root().string() + ": tensor " + name + " is beyond the " +
                        std::to_string(moe.numExperts) + " experts the config describes");
    }
}

bool CheckpointWeights::isFusedPart(std::string_view module) const {
    for (const FusedProjection& f : config_.fusedProjections())
        for (const auto& part : f.parts)
            if (part.first == module) return true;
    return false;
}

// A part of a fused projection (Phi-3's q_proj inside qkv_proj): its rows of the fused weight and bias.
std::optional<Linear> CheckpointWeights::fusedPart(int layer, const std::string& module, int out, int in) const {
    for (const FusedProjection& f : config_.fusedProjections()) {
        std::int64_t begin = 0, total = 0;
        bool found = false;
        for (const auto& [part, rows] : f.parts) {
            if (part == module) found = true;
            if (!found) begin += rows;
            total += rows;
        }
        if (!found) continue;
        const std::string base = config_.layerPrefix(layer) + f.fused;
        const io::TensorView t = checked(base + ".weight", {total, in});
        Linear l;
        l.weight = convertRows(t, begin, begin + out);
        requireFiniteWeights(l.weight, checkpoint_.root().string(), base, options_.allowNonFinite);
        if (checkpoint_.find(base + ".bias")) {
            const VectorF bias = vector(base + ".bias", static_cast<int>(total));
            l.bias = bias.segment(begin, out);
        }
        return l;
    }
    return std::nullopt;
}

// Expert `expert` of a stacked tensor "<block>.experts.<module>" [E, in, out] (x @ W, as transformers'
// GptOssExperts holds it) as a Linear [out, in], with its row of "<module>_bias" [E, out].
Linear CheckpointWeights::stackedExpert(int layer, const std::string& module, int expert, int out, int in) const {
    const std::string name = config_.layerPrefix(layer) + config_.moe.names.experts() + module;
    const io::TensorView t = checked(name, {config_.moe.numExperts, in, out});
    MatrixF stored(in, out);
    const auto size = static_cast<std::size_t>(in) * static_cast<std::size_t>(out);
    t.decode(static_cast<std::size_t>(expert) * size, size, stored.data());
    Linear l;
    l.weight = stored.transpose();
    requireFiniteWeights(l.weight, checkpoint_.root().string(), name + "[" + std::to_string(expert) + "]",
                         options_.allowNonFinite);
    const io::TensorView bias = checked(name + "_bias", {config_.moe.numExperts, out});
    l.bias.resize(out);
    bias.decode(static_cast<std::size_t>(expert) * static_cast<std::size_t>(out), static_cast<std::size_t>(out),
                l.bias.data());
    return l;
}

Linear CheckpointWeights::linear(int layer, const std::string& module, int out, int in, bool bias) const {
    if (auto part = fusedPart(layer, module, out, in)) return std::move(*part);
    const std::string base = config_.layerPrefix(layer) + module;
    Linear l;
    const io::TensorView t = checked(base + ".weight", {out, in});
    l.weight = t.toMatrix();
    requireFiniteWeights(l.weight, checkpoint_.root().string(), base, options_.allowNonFinite);
    t.releasePages();  // the f32 copy is what is used now: the mapped pages need not stay resident
    // A bias the config does not announce is still honoured: HF loads every parameter it finds.
    if (bias || checkpoint_.find(base + ".bias")) l.bias = vector(base + ".bias", out);
    return l;
}

VectorF CheckpointWeights::vector(const std::string& name, int size) const {
    const std::vector<float> values = checked(name, {size}).toF32();
    return Eigen::Map<const VectorF>(values.data(), size);
}

LayerWeights CheckpointWeights::layer(int index) const {
    if (index < 0 || index >= config_.numLayers)
        throw Error(checkpoint_.root().string() + ": no decoder layer " + std::to_string(index));
    const std::string p = config_.layerPrefix(index);
    const int h = config_.hiddenSize, ff = config_.intermediateSize;
    const Architecture& arch = config_.arch;
    LayerWeights w;
    w.inputNorm = vector(p + arch.inputNorm + ".weight", h);
    w.postAttentionNorm = vector(p + arch.preMlpNorm + ".weight", h);
    if (!arch.attentionOutputNorm.empty()) w.attentionOutputNorm = vector(p + arch.attentionOutputNorm + ".weight", h);
    if (!arch.mlpOutputNorm.empty()) w.mlpOutputNorm = vector(p + arch.mlpOutputNorm + ".weight", h);
    if (config_.qkNorm && !config_.isLinearAttentionLayer(index)) {
        w.qNorm = vector(p + modules::kQNorm + ".weight", config_.headDim);
        w.kNorm = vector(p + modules::kKNorm + ".weight", config_.headDim);
    }
    if (config_.arch.attentionSinks) w.sinks = vector(p + modules::kSinks, config_.numHeads);
    // GLM's correction bias, a buffer of the router (transformers initialises it to zeros, no bias, when
    // a checkpoint lacks it); read with the norms, as it is no linear.
    const std::string scoreBias = p + config_.moe.names.routerScoreBias();
    if (config_.isMoeLayer(index) && config_.moe.scoring == RouterScoring::SigmoidGrouped &&
        checkpoint_.find(scoreBias))
        w.routerScoreBias = vector(scoreBias, config_.moe.numExperts);
    w.attention = config_.attentionLayout(index);
    if (w.isDeltaNet()) {  // the linear attention's parameters beside its linears
        const LinearAttentionConfig& la = config_.linearAttention;
        DeltaNetWeights& d = w.deltaNet;
        const io::TensorView conv = checked(p + modules::kDeltaConv + ".weight", {la.convDim(), 1, la.convKernel});
        d.conv.resize(la.convDim(), la.convKernel);
        conv.decode(0, static_cast<std::size_t>(d.conv.size()), d.conv.data());
        d.aLog = vector(p + modules::kDeltaALog, la.numValueHeads);
        d.dtBias = vector(p + modules::kDeltaDtBias, la.numValueHeads);
        d.norm = vector(p + modules::kDeltaNorm + ".weight", la.valueHeadDim);
    }
    if (config_.mla.active()) {
        if (config_.mla.qLoraRank > 0) w.qANorm = vector(p + modules::kQANorm + ".weight", config_.mla.qLoraRank);
        w.kvANorm = vector(p + modules::kKvANorm + ".weight", config_.mla.kvLoraRank);
    }
    if (!options_.linears) return w;
    for (const LinearShape& l : attentionLinears(config_, index))
        w.linear(l.module) = linear(index, l.module, int(l.out), int(l.in), l.bias);
    if (w.isDeltaNet()) {
        const int heads = config_.linearAttention.numValueHeads;
        w.deltaNet.inProjB = linear(index, modules::kInProjB, heads, h, false);
        w.deltaNet.inProjA = linear(index, modules::kInProjA, heads, h, false);
    }
    if (config_.isMoeLayer(index)) {
        const MoeConfig& moe = config_.moe;
        const int eff = moe.expertIntermediateSize;
        w.moeNames = moe.names;
        w.router = linear(index, moe.names.router(), moe.numExperts, h, false);
        w.experts.resize(static_cast<std::size_t>(moe.numExperts));
        for (int e = 0; e < moe.numExperts; ++e) {
            const std::string x = moe.names.expert(e);
            Expert& expert = w.experts[static_cast<std::size_t>(e)];
            if (moe.stackedExperts) {  // gpt-oss: gate_up_proj fused (interleaved rows), biased
                expert.gate = stackedExpert(index, moe.names.gate, e, 2 * eff, h);
                expert.down = stackedExpert(index, moe.names.down, e, h, eff);
                continue;
            }
            expert.gate = linear(index, x + moe.names.gate, eff, h, false);
            expert.up = linear(index, x + moe.names.up, eff, h, false);
            expert.down = linear(index, x + moe.names.down, h, eff, false);
        }
        if (moe.sharedExpertIntermediateSize > 0) w.sharedExpert = sharedExpert(index);
        if (moe.sharedExpertGate) w.sharedExpertGate = linear(index, moe.names.sharedExpertGate(), 1, h, false);
        return w;
    }
    w.gate = linear(index, modules::kGateProj, ff, h, config_.mlpBias);
    w.up = linear(index, modules::kUpProj, ff, h, config_.mlpBias);
    w.down = linear(index, modules::kDownProj, h, ff, config_.mlpBias);
    return w;
}

// GLM's shared expert, moe_intermediate_size * n_shared_experts wide.
Expert CheckpointWeights::sharedExpert(int index) const {
    const MoeConfig& moe = config_.moe;
    const std::string x = moe.names.sharedExpert();
    const int h = config_.hiddenSize, width = moe.sharedExpertIntermediateSize;
    return {linear(index, x + moe.names.gate, width, h, false), linear(index, x + moe.names.up, width, h, false),
            linear(index, x + moe.names.down, h, width, false)};
}

MatrixF CheckpointWeights::embeddingRows(std::span<const TokenId> tokens) const {
    const io::TensorView t = checkpoint_.tensor(embeddingName());
    MatrixF rows(static_cast<Eigen::Index>(tokens.size()), config_.hiddenSize);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] < 0 || tokens[i] >= config_.vocabSize)
            throw Error(checkpoint_.root().string() + ": token id " + std::to_string(tokens[i]) +
                        " is outside the vocabulary of " + std::to_string(config_.vocabSize));
        rows.row(static_cast<Eigen::Index>(i)) = convertRows(t, tokens[i], tokens[i] + 1);
    }
    return rows;
}

VectorF CheckpointWeights::finalNorm() const {
    return vector(config_.arch.tensorPrefix + "norm.weight", config_.hiddenSize);
}

std::string CheckpointWeights::embeddingName() const { return config_.arch.tensorPrefix + "embed_tokens.weight"; }

MatrixF CheckpointWeights::lmHead(const MatrixF& normedHidden, const LayerMath& math) const {
    if (!options_.lmHead) throw Error(checkpoint_.root().string() + ": lm_head was not to be read as a dense tensor");
    const io::TensorView t = checkpoint_.tensor(lmHeadName_);
    const std::int64_t vocab = config_.vocabSize;
    MatrixF logits(normedHidden.rows(), vocab);
    // Blocks of 8192 vocabulary rows keep the f32 copy small (32 MB at hidden 1024) while each GEMM
    // stays large enough to run near peak.
    constexpr std::int64_t kBlock = 8192;
    for (std::int64_t begin = 0; begin < vocab; begin += kBlock) {
        const std::int64_t end = std::min(vocab, begin + kBlock);
        const MatrixF w = convertRows(t, begin, end);
        logits.middleCols(begin, end - begin) = math.product(normedHidden, w);
    }
    t.releasePages();
    return logits;
}

}  // namespace qs::model
