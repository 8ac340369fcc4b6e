#include "cuda_hessian.h"

#include <algorithm>
#include <string>

#include "cuda_check.h"
#include "hessian_kernels.h"
#include "qs/error.h"
#include "qs/gpu/device_buffer.h"
#include "qs/gpu/device_info.h"

namespace qs::gpu {

void gramLowerOnDevice(const CudaContext& context, const float* x, std::int64_t n, std::int64_t f, float* gram) {
    // x row-major [n, f] is Xᵀ column-major [f, n] (ld f): XᵀX = A Aᵀ with A = Xᵀ, no transpose.
    const float one = 1.0f, zero = 0.0f;
    QS_CUBLAS(cublasSsyrk_64(context.blas(), CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, f, n, &one, x, f, &zero, gram, f));
}

namespace {

class CudaHessianSink final : public pipeline::HessianSink {
public:
    CudaHessianSink(CudaContextPtr context, std::int64_t features) : context_(std::move(context)), features_(features) {
        if (features <= 0) throw Error("HessianAccumulator: features must be positive");
        requireDeviceMemory(features * features * 12 + features * 8, "the Hessian of " + std::to_string(features) + " inputs");
        sum_ = DeviceBuffer<double>(features * features);
        sum_.fillZero();
        absSum_ = DeviceBuffer<double>(features);
        absSum_.fillZero();
        gram_ = DeviceBuffer<float>(features * features);
    }

    void add(const Eigen::Ref<const MatrixF>& x, std::int64_t chunkRows) override {
        if (x.cols() != features_)
            throw Error("HessianAccumulator: input has " + std::to_string(x.cols()) + " features, expected " +
                        std::to_string(features_));
        chunkRows = std::max<std::int64_t>(chunkRows, 1);
        for (std::int64_t r = 0; r < x.rows(); r += chunkRows) addChunk(x.middleRows(r, std::min(chunkRows, x.rows() - r)));
    }

    std::int64_t samples() const override { return samples_; }

    MatrixF finalize() const override {
        if (samples_ == 0) throw Error("HessianAccumulator: no samples were added");
        Eigen::MatrixXd sum(features_, features_);   // column-major, like the device copy
        sum_.download(sum.data(), sum.size());
        const double k = 2.0 / static_cast<double>(samples_);
        MatrixF h(features_, features_);
#pragma omp parallel for schedule(static)
        for (std::int64_t r = 0; r < features_; ++r)
            for (std::int64_t c = 0; c < features_; ++c) h(r, c) = static_cast<float>(k * (r >= c ? sum(r, c) : sum(c, r)));
        return h;
    }

    VectorF meanAbs() const override {
        if (samples_ == 0) throw Error("HessianAccumulator: no samples were added");
        VectorD abs(features_);
        absSum_.download(abs.data(), features_);
        return (abs / static_cast<double>(samples_)).cast<float>();
    }

private:
    void addChunk(const Eigen::Ref<const MatrixF>& x) {
        const std::int64_t n = x.rows(), f = features_;
        if (n == 0) return;
        if (input_.size() < n * f) {
            requireDeviceMemory(n * f * 4, "a Hessian input chunk");
            input_ = DeviceBuffer<float>(n * f);
        }
        if (x.outerStride() == f) {
            input_.upload(x.data(), n * f);
        } else {
            const MatrixF packed = x;
            input_.upload(packed.data(), n * f);
        }
        gramLowerOnDevice(*context_, input_.data(), n, f, gram_.data());
        kernels::addLowerToSum(gram_.data(), f, sum_.data());
        kernels::addAbsColumns(input_.data(), n, f, absSum_.data());
        samples_ += n;
    }

    CudaContextPtr context_;
    std::int64_t features_;
    std::int64_t samples_ = 0;
    DeviceBuffer<double> sum_;
    DeviceBuffer<double> absSum_;
    DeviceBuffer<float> gram_;
    DeviceBuffer<float> input_;
};

}  // namespace

std::unique_ptr<pipeline::HessianSink> makeCudaHessianSink(CudaContextPtr context, std::int64_t features) {
    return std::make_unique<CudaHessianSink>(std::move(context), features);
}

}  // namespace qs::gpu
