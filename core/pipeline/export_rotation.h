#pragma once
// Private to qs_pipeline: what a --rotate result's export writes for the tensors it leaves dense
// (model::WeightRotation): the embedding E Q, lm_head L diag(g) Q (made from the embedding, and untied, when
// the source ties it: config.json's tie_word_embeddings becomes false), the norms the linears absorbed as
// identities, a MoE router as a reader of the rotated stream, and the biases of v_proj (per head), o_proj
// and down_proj rotated. The quantized linears are the rotated ones already; q/k norms and biases stay.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/model/weight_rotation.h"

namespace qs::pipeline {

class ExportRotation {
public:
    // Throws qs::Error (model::rotationRefusal's line) for a source whose model cannot fold the rotation.
    ExportRotation(const io::Checkpoint& source, std::uint64_t seed);

    // The rotated model's values of source tensor `name`; nullopt when the rotation leaves it as it is. Throws
    // qs::Error for a dense linear of a decoder layer that the rotation does not cover (a linear the result
    // did not quantize).
    std::optional<std::vector<float>> valuesOf(const std::string& name) const;
    // Whether the source ties lm_head to the embedding: the export then adds lmHeadName() (lmHead()).
    bool untiesLmHead() const { return config_.tieWordEmbeddings; }
    const std::string& lmHeadName() const { return config_.arch.lmHead; }
    std::vector<float> lmHead() const;
    std::vector<std::int64_t> lmHeadShape() const { return {config_.vocabSize, config_.hiddenSize}; }

private:
    enum class Kind { Embedding, LmHead, Norm, Router, ValueBias, WriterBias };
    struct Part {
        Kind kind;
        int layer = -1;
    };

    MatrixF matrix(const std::string& name) const;
    VectorF vector(const std::string& name) const;
    VectorF preMlpNorm(int layer) const;

    const io::Checkpoint& source_;
    model::ModelConfig config_;
    model::WeightRotation rotation_;
    std::map<std::string, Part> parts_;
};

}  // namespace qs::pipeline
