// The CUDA backend: device 0, its cuBLAS / cuSOLVER handles, and the operations of pipeline::Backend.
#include "qs/gpu/cuda_backend.h"

#include <utility>

#include "qs/gpu/device_info.h"

#include "cuda_awq.h"
#include "cuda_check.h"
#include "cuda_context.h"
#include "cuda_formats.h"
#include "cuda_gptq.h"
#include "cuda_hessian.h"
#include "cuda_layer_math.h"
#include "cuda_trellis.h"
#include "device_plan.h"

namespace qs::gpu {

CudaContext::CudaContext() {
    QS_CUBLAS(cublasCreate(&blas_));
    const cusolverStatus_t status = cusolverDnCreate(&solver_);
    if (status != CUSOLVER_STATUS_SUCCESS) {
        cublasDestroy(blas_);
        QS_CUSOLVER(status);
    }
    // f32 products and sums in cuBLAS: no TF32 tensor-core rounding, which would move GPTQ codes.
    QS_CUBLAS(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));
}

CudaContext::~CudaContext() {
    cusolverDnDestroy(solver_);
    cublasDestroy(blas_);
}

namespace {

class CudaBackend final : public pipeline::Backend {
public:
    CudaBackend() : context_(std::make_shared<CudaContext>()), math_(makeCudaLayerMath(context_)) {}

    std::string description() const override { return describeDevice(queryDevice()); }
    bool isCuda() const override { return true; }
    std::int64_t freeMemoryBytes() const override { return queryDevice().freeBytes; }
    std::int64_t peakDeviceBytes(const pipeline::DeviceWorkload& w) const override { return cudaPeakDeviceBytes(w); }
    std::shared_ptr<const model::LayerMath> layerMath() const override { return math_; }

    std::unique_ptr<pipeline::HessianSink> hessian(std::int64_t features) const override {
        return makeCudaHessianSink(context_, features);
    }
    std::unique_ptr<pipeline::DiagonalSink> hessianDiagonal(std::int64_t features) const override {
        return makeCudaDiagonalSink(features);
    }
    quant::QuantizedLinear gptq(const MatrixF& w, const MatrixF& h, const quant::GptqOptions& o) const override {
        return cudaGptq(*context_, w, MatrixF(h), o);
    }
    quant::QuantizedLinear gptqConsuming(const MatrixF& w, MatrixF&& h, const quant::GptqOptions& o) const override {
        return cudaGptq(*context_, w, std::move(h), o);
    }
    quant::QuantizedLinear fp8(const MatrixF& w, quant::Fp8Scaling scaling, int block) const override {
        return cudaFp8(w, scaling, block);
    }
    quant::QuantizedLinear mxfp4(const MatrixF& w) const override { return cudaMxfp4(w); }
    quant::QuantizedLinear nvfp4(const MatrixF& w) const override { return cudaNvfp4(w); }
    quant::QuantizedLinear nf4(const MatrixF& w, const quant::Nf4Options& o) const override { return cudaNf4(w, o); }
    quant::QuantizedLinear trellis(const MatrixF& w, const quant::TrellisOptions& o) const override {
        return cudaTrellis(w, o);
    }
    quant::AwqResult awq(const std::vector<const MatrixF*>& weights, const VectorF& meanAbs, const MatrixF& h,
                         const quant::AwqOptions& o) const override {
        return cudaAwq(*context_, weights, meanAbs, h, o);
    }
    MatrixF decode(const quant::QuantizedLinear& q) const override { return cudaDecode(q); }

private:
    CudaContextPtr context_;
    std::shared_ptr<const model::LayerMath> math_;
};

}  // namespace

std::shared_ptr<pipeline::Backend> makeCudaBackend(std::string& whyNot) {
    const DeviceInfo info = queryDevice();
    if (!info.present) {
        whyNot = info.whyNot;
        return nullptr;
    }
    return std::make_shared<CudaBackend>();
}

void registerCudaBackend() { pipeline::registerCudaBackendFactory(makeCudaBackend); }

}  // namespace qs::gpu
