#include "qs/model/weight_rotation.h"

#include "qs/architectures/registry.h"
#include "qs/error.h"

namespace qs::model {
namespace {

// Every row's consecutive segments of r.size() values, each rotated: x <- x Mᵀ.
void rotateRowSegments(MatrixF& m, const quant::RandomHadamard& r) {
    const auto d = static_cast<Eigen::Index>(r.size());
    if (m.cols() % d != 0)
        throw Error("WeightRotation: " + std::to_string(m.cols()) + " columns are no whole number of heads of " +
                    std::to_string(d));
    for (Eigen::Index row = 0; row < m.rows(); ++row)
        for (Eigen::Index at = 0; at < m.cols(); at += d) r.rotate(m.data() + row * m.cols() + at);
}

// Qᵀ m: every column rotated (as a row vector c, (Qᵀ c)ᵀ = cᵀ Q), by rotating the rows of the transpose.
void rotateColumns(MatrixF& m, const quant::RandomHadamard& r, bool segments) {
    MatrixF t = m.transpose();
    if (segments)
        rotateRowSegments(t, r);
    else
        r.rotateRows(t);
    m = t.transpose();
}

// Qᵀ v: the vector as a one-column matrix.
void rotateVector(VectorF& v, const quant::RandomHadamard& r, bool segments) {
    if (v.size() == 0) return;
    MatrixF column = v;
    rotateColumns(column, r, segments);
    v = column;
}

}  // namespace

std::string rotationRefusal(const ModelConfig& c) {
    const std::string what = "--rotate: " + c.modelType + " ";
    if (!c.arch.attentionOutputNorm.empty() || !c.arch.mlpOutputNorm.empty())
        return what + "normalises its sub-blocks' outputs (sandwich norms), which no linear can absorb";
    if (c.mla.active()) return what + "has latent attention, whose latent norms sit between two linears";
    if (c.linearAttention.active() || c.attentionOutputGate || c.llama4.active())
        return what + "has an attention that does not pass a per-head rotation of its values through";
    if (c.moe.stackedExperts || !c.moe.names.shared.empty() || c.moe.sharedExpertGate ||
        c.moe.scoring == RouterScoring::SigmoidScalesInput)
        return what + "has experts that are not plain SwiGLU experts beside a softmax router";
    if (!c.fusedProjections().empty() || !c.arch.passThroughPrefixes.empty())
        return what + "stores fused projections or a vision tower that the rotation does not cover";
    const architectures::Family* family = architectures::familyOf(c.modelType);
    if (!family || !family->foldsRotation)
        return what + "is not a family whose norms and linears a rotation is known to fold into (" +
               architectures::modelTypesWhere([](const architectures::Family& f) { return f.foldsRotation; }) + ")";
    return {};
}

WeightRotation::WeightRotation(ModelConfig config, std::uint64_t seed, Options options)
    : config_(std::move(config)),
      seed_(seed),
      options_(options),
      residual_(static_cast<std::size_t>(config_.hiddenSize), seed),
      // The per-head rotation draws its own signs: seed + 1, so that one seed names both.
      head_(static_cast<std::size_t>(config_.headDim), seed + 1) {
    if (const std::string refusal = rotationRefusal(config_); !refusal.empty()) throw Error(refusal);
}

VectorF WeightRotation::scale(const VectorF& norm) const { return (norm.array() + config_.arch.normOffset).matrix(); }

VectorF WeightRotation::foldedNorm(const VectorF& norm) const {
    if (!options_.foldNorms) return norm;
    return VectorF::Constant(norm.size(), 1.0f - config_.arch.normOffset);
}

void WeightRotation::foldNormInto(Linear& reader, const VectorF& norm) const {
    if (!options_.foldNorms) return;
    reader.weight = reader.weight * scale(norm).asDiagonal();
}

// W diag(offset + g) Q: reads the rotated residual stream through an identity norm.
void WeightRotation::rotateReader(Linear& reader, const VectorF& norm) const {
    foldNormInto(reader, norm);
    residual_.rotateRows(reader.weight);
}

// Qᵀ W, Qᵀ b: writes into the rotated residual stream.
void WeightRotation::rotateWriter(Linear& writer) const {
    rotateColumns(writer.weight, residual_, false);
    rotateWriterBias(writer.bias);
}

void WeightRotation::rotateWriterBias(VectorF& bias) const { rotateVector(bias, residual_, false); }

void WeightRotation::rotateValueBias(VectorF& bias) const { rotateVector(bias, head_, true); }

void WeightRotation::rotateLayer(LayerWeights& w) const {
    for (Linear* reader : {&w.q, &w.k, &w.v}) rotateReader(*reader, w.inputNorm);
    // Per head: v's rows Qhᵀ W_v (and its bias), o's columns W_o Qh; then o writes the residual stream.
    rotateColumns(w.v.weight, head_, true);
    rotateValueBias(w.v.bias);
    rotateRowSegments(w.o.weight, head_);
    rotateWriter(w.o);
    if (w.isMoe()) {
        rotateReader(w.router, w.postAttentionNorm);
        for (Expert& e : w.experts) {
            rotateReader(e.gate, w.postAttentionNorm);
            rotateReader(e.up, w.postAttentionNorm);
            rotateWriter(e.down);
        }
    } else {
        rotateReader(w.gate, w.postAttentionNorm);
        rotateReader(w.up, w.postAttentionNorm);
        rotateWriter(w.down);
    }
    w.inputNorm = foldedNorm(w.inputNorm);
    w.postAttentionNorm = foldedNorm(w.postAttentionNorm);
}

void WeightRotation::rotateEmbeddingRows(MatrixF& rows) const { residual_.rotateRows(rows); }

void WeightRotation::rotateLmHead(MatrixF& lmHead, const VectorF& finalNorm) const {
    if (options_.foldNorms) lmHead = lmHead * scale(finalNorm).asDiagonal();
    residual_.rotateRows(lmHead);
}

// logits = x' L'ᵀ = x' Qᵀ diag(g) Lᵀ, and x' Qᵀ = x' M is the rotation undone.
MatrixF WeightRotation::lmHeadInput(const MatrixF& normedHidden, const VectorF& finalNorm) const {
    MatrixF x = normedHidden;
    residual_.unrotateRows(x);
    if (options_.foldNorms) x = x * scale(finalNorm).asDiagonal();
    return x;
}

}  // namespace qs::model
