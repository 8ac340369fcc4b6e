#pragma once
// CheckpointWeights: a WeightSource over a dense Hugging Face checkpoint (any float dtype). Nothing is
// converted up front; each call converts only what it returns, so a forward pass holds one decoder
// layer in f32 at a time. The lm_head (or the tied embedding) is multiplied block by block.
// A quantized checkpoint's non-linear tensors (embedding, norms) are dense too: with
// Options::linears off, the seven linears of each layer are neither checked nor read, and a caller
// that decodes them (pipeline::DecodedWeights) fills them in. Fused projections (Phi-3's qkv_proj,
// gate_up_proj; ModelConfig::fusedProjections) are split into their parts' rows as they are read.
#include <optional>

#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/model/weight_source.h"

namespace qs::model {

struct CheckpointWeightsOptions {
    bool linears = true;          // read the decoder layers' linears (else layer() leaves them empty)
    bool lmHead = true;           // read lm_head (else lmHead() throws: the caller multiplies it)
    bool allowNonFinite = false;  // else layer() refuses a linear with NaN or Inf weights
};

class CheckpointWeights final : public WeightSource {
public:
    using Options = CheckpointWeightsOptions;

    // Checks that every tensor the forward pass needs exists with the shape `config` implies; throws
    // qs::Error naming the checkpoint and the tensor otherwise.
    CheckpointWeights(io::Checkpoint checkpoint, ModelConfig config, Options options = {});

    LayerWeights layer(int index) const override;
    MatrixF embeddingRows(std::span<const TokenId> tokens) const override;
    VectorF finalNorm() const override;
    MatrixF lmHead(const MatrixF& normedHidden, const LayerMath& math) const override;

private:
    io::TensorView checked(const std::string& name, std::vector<std::int64_t> shape) const;
    Linear linear(int layer, const std::string& module, int out, int in, bool bias) const;
    std::optional<Linear> fusedPart(int layer, const std::string& module, int out, int in) const;
    bool isFusedPart(std::string_view module) const;
    Linear stackedExpert(int layer, const std::string& module, int expert, int out, int in) const;
    Expert sharedExpert(int layer) const;
    VectorF vector(const std::string& name, int size) const;
    std::string embeddingName() const;  // "model.embed_tokens.weight", or under the text tower's prefix
    void validate() const;
    void validateExperts(int layer) const;

    io::Checkpoint checkpoint_;
    ModelConfig config_;
    Options options_;
    std::string lmHeadName_;  // Architecture::lmHead or, when tied, the embedding
};

}  // namespace qs::model
