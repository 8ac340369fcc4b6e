#pragma once
// DecodedWeights: a WeightSource over a checkpoint of any format formats::LinearReader reads (dense,
// GPTQ, AWQ, FP8, compressed-tensors, ModelOpt, bitsandbytes, ...). Each decoder layer's linears are
// decoded to f32 when the layer is asked for, with the format's own dequantization; the embedding and
// the norms are read by model::CheckpointWeights. A quantized lm_head is decoded once, on first use.
#include <memory>
#include <mutex>

#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/model_config.h"
#include "qs/model/weight_source.h"

namespace qs::pipeline {

class DecodedWeights final : public model::WeightSource {
public:
    // Detects the format and checks that every linear the config implies is there; throws qs::Error
    // naming the checkpoint otherwise (or when the format cannot be decoded).
    // Linears whose weights decode to NaN or Inf are refused unless `decode.allowNonFinite`.
    DecodedWeights(io::Checkpoint checkpoint, model::ModelConfig config, formats::DecodeOptions decode = {});

    model::LayerWeights layer(int index) const override;
    MatrixF embeddingRows(std::span<const model::TokenId> tokens) const override {
        return dense_->embeddingRows(tokens);
    }
    VectorF finalNorm() const override { return dense_->finalNorm(); }
    MatrixF lmHead(const MatrixF& normedHidden, const model::LayerMath& math) const override;

    const formats::FormatInfo& format() const { return reader_->format(); }

private:
    model::Linear decodeLinear(int layer, std::string_view module, std::int64_t out, std::int64_t in) const;
    void requireLinears() const;
    std::vector<std::string> storedLinears(int layer) const;
    void decodeExperts(int index, model::LayerWeights& weights) const;
    // A stacked expert (gpt-oss) must decode to [out, in] with `out` biases.
    void requireShape(const model::Linear& l, const std::string& module, int expert, std::int64_t out,
                      std::int64_t in) const;
    std::string fusedOwner(std::string_view module) const;

    std::unique_ptr<const io::Checkpoint> checkpoint_;  // the reader points into it: a stable address
    model::ModelConfig config_;
    std::unique_ptr<const formats::LinearReader> reader_;
    bool quantizedLmHead_ = false;
    std::unique_ptr<const model::CheckpointWeights> dense_;
    mutable std::once_flag lmHeadOnce_;
    mutable MatrixF lmHeadWeight_;  // the decoded quantized lm_head
};

}  // namespace qs::pipeline
