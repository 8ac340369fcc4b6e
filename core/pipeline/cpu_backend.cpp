// The CPU backend: each operation is the core/quant function of the same name, on the OpenMP threads.
#include <string>
#include <utility>

#include <omp.h>

#include "qs/error.h"
#include "qs/pipeline/backend.h"
#include "qs/pipeline/resource_estimate.h"
#include "qs/quant/hessian.h"
#include "qs/quant/mxfp4.h"
#include "qs/quant/nvfp4.h"

namespace qs::pipeline {
namespace {

class CpuHessianSink final : public HessianSink {
public:
    CpuHessianSink(std::int64_t features, quant::GramInputs inputs) : accumulator_(features, inputs) {}
    void add(const Eigen::Ref<const MatrixF>& x, std::int64_t chunkRows) override { accumulator_.add(x, chunkRows); }
    std::int64_t samples() const override { return accumulator_.samples(); }
    MatrixF finalize() const override { return accumulator_.finalize(); }
    VectorF meanAbs() const override { return accumulator_.meanAbs(); }
    MatrixF release() override { return accumulator_.release(); }
    void discard() override { accumulator_.discard(); }
    bool released() const override { return accumulator_.released(); }
    std::uint64_t hostBytes() const override { return accumulator_.bytes(); }

private:
    quant::HessianAccumulator accumulator_;
};

class CpuDiagonalSink final : public DiagonalSink {
public:
    explicit CpuDiagonalSink(std::int64_t features) : sum_(VectorD::Zero(features)) {
        if (features <= 0) throw Error("DiagonalSink: features must be positive");
    }
    void add(const Eigen::Ref<const MatrixF>& x) override {
        if (x.cols() != sum_.size())
            throw Error("DiagonalSink: input has " + std::to_string(x.cols()) + " features, expected " +
                        std::to_string(sum_.size()));
        // Row after row, each column's sum in order: a float squared is exact in f64, so the device's
        // column loop gives the same bits.
        for (Eigen::Index r = 0; r < x.rows(); ++r) sum_ += x.row(r).transpose().cast<double>().cwiseAbs2();
        samples_ += x.rows();
    }
    std::int64_t samples() const override { return samples_; }
    VectorD finalize() const override {
        if (samples_ == 0) throw Error("DiagonalSink: no samples were added");
        return sum_ * (2.0 / static_cast<double>(samples_));
    }

private:
    VectorD sum_;
    std::int64_t samples_ = 0;
};

class CpuBackend final : public Backend {
public:
    std::string description() const override {
        const int threads = omp_get_max_threads();
        return "CPU (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
    }
    bool isCuda() const override { return false; }
    std::int64_t freeMemoryBytes() const override { return static_cast<std::int64_t>(availableMemoryBytes()); }

    std::unique_ptr<HessianSink> hessian(std::int64_t features) const override {
        return std::make_unique<CpuHessianSink>(features, quant::GramInputs::F32);
    }
    std::unique_ptr<HessianSink> hessianOfBf16Inputs(std::int64_t features) const override {
        return std::make_unique<CpuHessianSink>(features, quant::GramInputs::Bf16);
    }
    std::unique_ptr<DiagonalSink> hessianDiagonal(std::int64_t features) const override {
        return std::make_unique<CpuDiagonalSink>(features);
    }
    quant::QuantizedLinear gptq(const MatrixF& w, const MatrixF& h, const quant::GptqOptions& o) const override {
        return quant::quantizeGptq(w, h, o);
    }
    quant::QuantizedLinear gptqConsuming(const MatrixF& w, MatrixF&& h, const quant::GptqOptions& o) const override {
        return quant::quantizeGptq(w, std::move(h), o);
    }
    quant::QuantizedLinear fp8(const MatrixF& w, quant::Fp8Scaling scaling, int block) const override {
        return quant::quantizeFp8(w, scaling, block);
    }
    quant::QuantizedLinear mxfp4(const MatrixF& w) const override { return quant::quantizeMxfp4(w); }
    quant::QuantizedLinear nvfp4(const MatrixF& w) const override { return quant::quantizeNvfp4(w); }
    quant::QuantizedLinear nf4(const MatrixF& w, const quant::Nf4Options& o) const override {
        return quant::quantizeNf4(w, o);
    }
    quant::QuantizedLinear trellis(const MatrixF& w, const quant::TrellisOptions& o) const override {
        return quant::quantizeTrellis(w, o);
    }
    MatrixF decode(const quant::QuantizedLinear& q) const override {
        // The formats' own decoders (block scale product first, as in docs/reference-algorithms.md).
        const bool plainGroups = q.gIdx.empty() && q.rows * q.cols > 0 && q.blockRows > 0 && q.blockCols > 0;
        if (plainGroups && q.codeKind == quant::CodeKind::E4M3) return quant::dequantizeFp8(q);
        if (plainGroups && q.blockRows == 1 && q.codeKind == quant::CodeKind::E2M1) return quant::dequantizeMxfp4(q);
        if (plainGroups && q.blockRows == 1 && q.codeKind == quant::CodeKind::Nf4) return quant::dequantizeNf4(q);
        return q.dequantize();
    }
};

}  // namespace

std::shared_ptr<Backend> makeCpuBackend() { return std::make_shared<CpuBackend>(); }

}  // namespace qs::pipeline
