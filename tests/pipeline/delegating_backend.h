#pragma once
// A Backend that forwards every operation to another one (the CPU's by default): tests derive from
// it to stand in for a device, overriding only the operation they observe or alter.
#include <memory>
#include <utility>

#include "qs/pipeline/backend.h"

namespace qs::test {

class DelegatingBackend : public pipeline::Backend {
public:
    explicit DelegatingBackend(std::shared_ptr<pipeline::Backend> inner = pipeline::makeCpuBackend())
        : inner_(std::move(inner)) {}

    std::string description() const override { return inner_->description(); }
    bool isCuda() const override { return inner_->isCuda(); }
    std::int64_t freeMemoryBytes() const override { return inner_->freeMemoryBytes(); }
    std::unique_ptr<pipeline::HessianSink> hessian(std::int64_t features) const override {
        return inner_->hessian(features);
    }
    std::unique_ptr<pipeline::HessianSink> hessianOfBf16Inputs(std::int64_t features) const override {
        return inner_->hessianOfBf16Inputs(features);
    }
    std::unique_ptr<pipeline::DiagonalSink> hessianDiagonal(std::int64_t features) const override {
        return inner_->hessianDiagonal(features);
    }
    quant::QuantizedLinear gptq(const MatrixF& w, const MatrixF& h, const quant::GptqOptions& o) const override {
        return inner_->gptq(w, h, o);
    }
    quant::QuantizedLinear gptqConsuming(const MatrixF& w, MatrixF&& h, const quant::GptqOptions& o) const override {
        return inner_->gptqConsuming(w, std::move(h), o);
    }
    quant::QuantizedLinear fp8(const MatrixF& w, quant::Fp8Scaling s, int block) const override {
        return inner_->fp8(w, s, block);
    }
    quant::QuantizedLinear mxfp4(const MatrixF& w) const override { return inner_->mxfp4(w); }
    quant::QuantizedLinear nvfp4(const MatrixF& w) const override { return inner_->nvfp4(w); }
    quant::QuantizedLinear nf4(const MatrixF& w, const quant::Nf4Options& o) const override {
        return inner_->nf4(w, o);
    }
    quant::QuantizedLinear trellis(const MatrixF& w, const quant::TrellisOptions& o) const override {
        return inner_->trellis(w, o);
    }
    quant::AwqResult awq(const std::vector<const MatrixF*>& weights, const VectorF& meanAbs, const MatrixF& h,
                         const quant::AwqOptions& o) const override {
        return inner_->awq(weights, meanAbs, h, o);
    }
    std::shared_ptr<const model::LayerMath> layerMath() const override { return inner_->layerMath(); }
    MatrixF decode(const quant::QuantizedLinear& q) const override { return inner_->decode(q); }

private:
    std::shared_ptr<pipeline::Backend> inner_;
};

}  // namespace qs::test
