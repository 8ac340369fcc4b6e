#include "cuda_hessian.h"

#include <algorithm>
#include <string>
#include <vector>

#include "qs/error.h"
#include "qs/gpu/device_buffer.h"
#include "qs/gpu/device_info.h"

#include "cuda_check.h"
#include "hessian_kernels.h"
#include "stream_lane.h"

namespace qs::gpu {

void gramLowerOnDevice(cublasHandle_t blas, const float* x, std::int64_t n, std::int64_t f, float* gram) {
    // x row-major [n, f] is Xᵀ column-major [f, n] (ld f): XᵀX = A Aᵀ with A = Xᵀ, no transpose.
    const float one = 1.0f, zero = 0.0f;
    QS_CUBLAS(cublasSsyrk_64(blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, f, n, &one, x, f, &zero, gram, f));
}

void gramLowerOnDevice(const CudaContext& context, const float* x, std::int64_t n, std::int64_t f, float* gram) {
    gramLowerOnDevice(context.blas(), x, n, f, gram);
}

namespace {

// One of the two chunk buffers: while the compute stream works on one, the host fills the other's
// pinned memory and the copy stream uploads it.
struct ChunkSlot {
    PinnedBuffer host;
    DeviceBuffer<float> device;
    std::int64_t capacity = 0;  // floats
    CudaEvent uploaded;         // on the copy stream: device holds the chunk
    CudaEvent consumed;         // on the compute stream: the chunk's SYRK and sums are done
    bool inFlight = false;
};

// Rows of x into pinned memory, packed to [n, f] (x may be a column block of a wider matrix).
void packRows(const Eigen::Ref<const MatrixF>& x, float* to) {
    const std::int64_t f = x.cols();
#pragma omp parallel for schedule(static) if (x.size() > (1 << 20))
    for (std::int64_t r = 0; r < x.rows(); ++r) std::copy_n(x.row(r).data(), f, to + r * f);
}

class CudaHessianSink final : public pipeline::HessianSink {
public:
    CudaHessianSink(CudaContextPtr context, std::int64_t features) : context_(std::move(context)), features_(features) {
        if (features <= 0) throw Error("HessianAccumulator: features must be positive");
        requireDeviceMemory(features * features * 12 + features * 8,
                            "the Hessian of " + std::to_string(features) + " inputs");
        sum_ = DeviceBuffer<double>(features * features);
        sum_.fillZero();
        absSum_ = DeviceBuffer<double>(features);
        absSum_.fillZero();
        gram_ = DeviceBuffer<float>(features * features);
    }

    void add(const Eigen::Ref<const MatrixF>& x, std::int64_t chunkRows) override {
        if (released_) throw Error("HessianAccumulator: add() after release()");
        if (x.cols() != features_)
            throw Error("HessianAccumulator: input has " + std::to_string(x.cols()) + " features, expected " +
                        std::to_string(features_));
        chunkRows = std::max<std::int64_t>(chunkRows, 1);
        for (std::int64_t r = 0; r < x.rows(); r += chunkRows)
            addChunk(x.middleRows(r, std::min(chunkRows, x.rows() - r)));
    }

    std::int64_t samples() const override { return samples_; }

    MatrixF finalize() const override {
        if (released_) throw Error("HessianAccumulator: finalize() after release()");
        if (samples_ == 0) throw Error("HessianAccumulator: no samples were added");
        finish();
        Eigen::MatrixXd sum(features_, features_);  // column-major, like the device copy
        sum_.download(sum.data(), sum.size());
        const double k = 2.0 / static_cast<double>(samples_);
        MatrixF h(features_, features_);
#pragma omp parallel for schedule(static)
        for (std::int64_t r = 0; r < features_; ++r)
            for (std::int64_t c = 0; c < features_; ++c)
                h(r, c) = static_cast<float>(k * (r >= c ? sum(r, c) : sum(c, r)));
        return h;
    }

    VectorF meanAbs() const override {
        if (samples_ == 0) throw Error("HessianAccumulator: no samples were added");
        finish();
        VectorD abs(features_);
        absSum_.download(abs.data(), features_);
        return (abs / static_cast<double>(samples_)).cast<float>();
    }

    MatrixF release() override {
        MatrixF h = finalize();
        discard();
        return h;
    }

    // The sums, the chunk buffers and the gram go; the per-channel |x| sums (f features) stay for meanAbs().
    void discard() override {
        finish();
        sum_ = DeviceBuffer<double>();
        gram_ = DeviceBuffer<float>();
        for (ChunkSlot& slot : slots_) {
            slot.host = PinnedBuffer();
            slot.device = DeviceBuffer<float>();
            slot.capacity = 0;
            slot.inFlight = false;
        }
        released_ = true;
    }

    bool released() const override { return released_; }
    std::uint64_t hostBytes() const override {  // the sums are on the device; the host holds the pinned chunks
        return static_cast<std::uint64_t>(slots_[0].capacity + slots_[1].capacity) * sizeof(float);
    }

private:
    // Upload (copy stream) of this chunk overlaps the previous chunk's SYRK (compute stream).
    void addChunk(const Eigen::Ref<const MatrixF>& x) {
        const std::int64_t n = x.rows(), f = features_;
        if (n == 0) return;
        const StreamLane& lane = context_->lane();
        ChunkSlot& slot = slots_[next_];
        next_ ^= 1;
        if (slot.inFlight) slot.consumed.synchronize();  // its pinned and device memory are free again
        if (slot.capacity < n * f) grow(slot, n * f);
        packRows(x, static_cast<float*>(slot.host.data()));
        QS_CUDA(cudaMemcpyAsync(slot.device.data(), slot.host.data(), static_cast<std::size_t>(n * f) * sizeof(float),
                                cudaMemcpyHostToDevice, lane.copy()));
        slot.uploaded.record(lane.copy());
        QS_CUDA(cudaStreamWaitEvent(lane.compute(), slot.uploaded.get(), 0));
        gramLowerOnDevice(lane.blas(), slot.device.data(), n, f, gram_.data());
        kernels::addLowerToSum(gram_.data(), f, sum_.data(), lane.compute());
        kernels::addAbsColumns(slot.device.data(), n, f, absSum_.data(), lane.compute());
        slot.consumed.record(lane.compute());
        slot.inFlight = true;
        samples_ += n;
    }

    void grow(ChunkSlot& slot, std::int64_t floats) {
        slot.device = DeviceBuffer<float>();
        slot.host = PinnedBuffer();
        requireDeviceMemory(floats * 4, "a Hessian input chunk");
        slot.device = DeviceBuffer<float>(floats);
        slot.host = PinnedBuffer(static_cast<std::size_t>(floats) * sizeof(float));
        slot.capacity = floats;
    }

    // The sums are complete once the compute stream has drained.
    void finish() const { QS_CUDA(cudaStreamSynchronize(context_->lane().compute())); }

    CudaContextPtr context_;
    std::int64_t features_;
    std::int64_t samples_ = 0;
    DeviceBuffer<double> sum_;
    DeviceBuffer<double> absSum_;
    DeviceBuffer<float> gram_;
    ChunkSlot slots_[2];
    int next_ = 0;
    bool released_ = false;
};

// The inputs go up one chunk at a time through a device buffer kept for the next; the sums stay on
// the device until finalize(). Copies, kernel and copies again all on the default stream, in order:
// the work per byte is one multiply-add, nothing to overlap.
class CudaDiagonalSink final : public pipeline::DiagonalSink {
public:
    explicit CudaDiagonalSink(std::int64_t features) : features_(features) {
        if (features <= 0) throw Error("DiagonalSink: features must be positive");
        sum_ = DeviceBuffer<double>(features);
        sum_.fillZero();
    }

    void add(const Eigen::Ref<const MatrixF>& x) override {
        if (x.cols() != features_)
            throw Error("DiagonalSink: input has " + std::to_string(x.cols()) + " features, expected " +
                        std::to_string(features_));
        const std::int64_t n = x.rows();
        if (n == 0) return;
        if (chunk_.size() < n * features_) {
            chunk_ = DeviceBuffer<float>();
            requireDeviceMemory(n * features_ * 4, "a Hessian diagonal input chunk");
            chunk_ = DeviceBuffer<float>(n * features_);
        }
        host_.resize(static_cast<std::size_t>(n * features_));
        packRows(x, host_.data());
        chunk_.upload(host_.data(), n * features_);
        kernels::addSquaredColumns(chunk_.data(), n, features_, sum_.data());
        samples_ += n;
    }

    std::int64_t samples() const override { return samples_; }

    VectorD finalize() const override {
        if (samples_ == 0) throw Error("DiagonalSink: no samples were added");
        VectorD sum(features_);
        sum_.download(sum.data(), features_);
        return sum * (2.0 / static_cast<double>(samples_));
    }

private:
    std::int64_t features_;
    std::int64_t samples_ = 0;
    DeviceBuffer<double> sum_;
    DeviceBuffer<float> chunk_;
    std::vector<float> host_;
};

}  // namespace

std::unique_ptr<pipeline::DiagonalSink> makeCudaDiagonalSink(std::int64_t features) {
    return std::make_unique<CudaDiagonalSink>(features);
}

std::unique_ptr<pipeline::HessianSink> makeCudaHessianSink(CudaContextPtr context, std::int64_t features) {
    return std::make_unique<CudaHessianSink>(std::move(context), features);
}

}  // namespace qs::gpu
