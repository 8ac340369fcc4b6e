#include "cuda_gptq.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "qs/error.h"
#include "qs/gpu/device_buffer.h"
#include "qs/gpu/device_info.h"
#include "qs/quant/gptq_solver.h"

#include "cuda_check.h"
#include "gptq_kernels.h"

namespace qs::gpu {
namespace {

constexpr std::int64_t kBlocksPerCancelPoll = 4;  // 512 columns: milliseconds on any device

// The device half of quant::quantizeGptq: H and U live on the device (cuSOLVER factors J H J and inverts
// the factor: U = M⁻¹ for the CPU's M), the block's column loop is a kernel and the lazy update one SGEMM.
// The host's H is freed as soon as it is uploaded, and the weights once the loop has its copy.
class CudaGptqSolver final : public quant::GptqSolver {
public:
    explicit CudaGptqSolver(const CudaContext& context) : context_(context) {}

    void takeHessian(const quant::GptqProblem& p, MatrixF&& h) override {
        const quant::GptqOptions& o = p.options;
        if (o.blockSize > kernels::kGptqMaxBlock)
            throw Error("GPTQ on CUDA: block size " + std::to_string(o.blockSize) + " is above the kernel's " +
                        std::to_string(kernels::kGptqMaxBlock));
        const std::int64_t rows = p.w.rows(), cols = p.w.cols();
        requireDeviceMemory(gptqDeviceBytes(rows, cols, o.blockSize, p.groups),
                            "GPTQ of a [" + std::to_string(rows) + ", " + std::to_string(cols) + "] layer");
        const MatrixF host = std::move(h);  // freed on return
        n_ = host.rows();
        h_ = DeviceBuffer<float>(host.data(), host.size());
        work_ = DeviceBuffer<float>(n_ * n_);
        u_ = DeviceBuffer<float>(n_ * n_);
    }

    bool factor(double lambda) override {
        if (!upperCholeskyOfInverseOnDevice(context_, h_.data(), n_, static_cast<float>(lambda), work_.data(),
                                            u_.data()))
            return false;
        h_ = DeviceBuffer<float>();  // neither is needed past the factorization
        work_ = DeviceBuffer<float>();
        return true;
    }

    double columnLoop(quant::GptqProblem& p, std::vector<std::uint8_t>& codes) override {
        const quant::GptqOptions& o = p.options;
        const std::int64_t rows = p.w.rows(), cols = p.w.cols();
        DeviceBuffer<float> w(p.w.data(), p.w.size());
        p.w = MatrixF();
        DeviceBuffer<float> err(rows * o.blockSize);
        DeviceBuffer<std::uint8_t> deviceCodes(rows * cols);
        DeviceBuffer<float> scales(p.scales.data(), p.scales.size());
        DeviceBuffer<float> zeros(p.zeros.data(), p.zeros.size());
        const DeviceBuffer<int> perm(p.perm.data(), cols);
        DeviceBuffer<double> loss(rows);
        loss.fillZero();

        kernels::GptqBlockArgs args{};
        args.w = w.data();
        args.u = u_.data();
        args.err = err.data();
        args.codes = deviceCodes.data();
        args.scales = scales.data();
        args.zeros = zeros.data();
        // Static grids are read from the same buffers, which the kernel then never writes.
        args.staticScales = o.staticGroups ? scales.data() : nullptr;
        args.staticZeros = o.staticGroups ? zeros.data() : nullptr;
        args.perm = perm.data();
        args.loss = loss.data();
        args.rows = rows;
        args.cols = cols;
        args.groupCols = p.groupCols;
        args.groups = p.groups;
        args.bits = o.bits;
        args.sym = o.sym;
        args.autoGptqRule = o.rule == quant::GridRule::AutoGptq;
        args.maxq = static_cast<float>((1 << o.bits) - 1);
        const float minusOne = -1.0f, one = 1.0f;
        for (std::int64_t i1 = 0; i1 < cols; i1 += o.blockSize) {
            // The launches are asynchronous: wait for the queued blocks now and then, so that a cancel
            // is seen while the device works rather than after it has finished the layer.
            if (o.cancel && i1 > 0 && (i1 / o.blockSize) % kBlocksPerCancelPoll == 0) {
                QS_CUDA(cudaDeviceSynchronize());
                o.cancel->throwIfCancelled();
            }
            const std::int64_t i2 = std::min<std::int64_t>(i1 + o.blockSize, cols);
            args.i1 = i1;
            args.i2 = i2;
            kernels::gptqBlock(args);
            if (i2 >= cols) continue;
            // W[:, i2:] -= Err · U[i1:i2, i2:]. Column-major views: Wᵀ rows i2.. (ld cols) -= U[i1:i2, i2:]ᵀ
            // (the row-major block, ld cols) times Errᵀ (err is [bw][rows], i.e. Err column-major, ld rows).
            const std::int64_t bw = i2 - i1;
            QS_CUBLAS(cublasSgemm_64(context_.blas(), CUBLAS_OP_N, CUBLAS_OP_T, cols - i2, rows, bw, &minusOne,
                                     u_.data() + i1 * cols + i2, cols, err.data(), rows, &one, w.data() + i2, cols));
        }

        deviceCodes.download(codes.data(), rows * cols);
        scales.download(p.scales.data(), p.scales.size());
        zeros.download(p.zeros.data(), p.zeros.size());
        std::vector<double> rowLoss(static_cast<std::size_t>(rows));
        loss.download(rowLoss.data(), rows);
        return 0.5 * std::accumulate(rowLoss.begin(), rowLoss.end(), 0.0);
    }

private:
    const CudaContext& context_;
    std::int64_t n_ = 0;
    DeviceBuffer<float> h_, work_, u_;
};

}  // namespace

bool upperCholeskyOfInverseOnDevice(const CudaContext& context, const float* h, std::int64_t n, float lambda,
                                    float* work, float* u) {
    kernels::reverseWithDamping(h, n, lambda, work);
    cusolverDnParams_t params = nullptr;
    QS_CUSOLVER(cusolverDnCreateParams(&params));
    struct ParamsGuard {
        cusolverDnParams_t p;
        ~ParamsGuard() { cusolverDnDestroyParams(p); }
    } guard{params};
    std::size_t deviceBytes = 0, hostBytes = 0;
    QS_CUSOLVER(cusolverDnXpotrf_bufferSize(context.solver(), params, CUBLAS_FILL_MODE_LOWER, n, CUDA_R_32F, work, n,
                                            CUDA_R_32F, &deviceBytes, &hostBytes));
    std::size_t trtriDevice = 0, trtriHost = 0;
    QS_CUSOLVER(cusolverDnXtrtri_bufferSize(context.solver(), CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_NON_UNIT, n,
                                            CUDA_R_32F, work, n, &trtriDevice, &trtriHost));
    RawDeviceBuffer deviceWork(std::max(std::max(deviceBytes, trtriDevice), std::size_t{1}));
    std::vector<char> hostWork(std::max(std::max(hostBytes, trtriHost), std::size_t{1}));
    DeviceBuffer<int> info(1);
    int status = 0;
    QS_CUSOLVER(cusolverDnXpotrf(context.solver(), params, CUBLAS_FILL_MODE_LOWER, n, CUDA_R_32F, work, n, CUDA_R_32F,
                                 deviceWork.data(), deviceBytes, hostWork.data(), hostBytes, info.data()));
    info.download(&status, 1);
    if (status != 0) return false;
    std::vector<float> diagonal(static_cast<std::size_t>(n));
    QS_CUDA(cudaMemcpy2D(diagonal.data(), sizeof(float), work, static_cast<std::size_t>(n + 1) * sizeof(float),
                         sizeof(float), static_cast<std::size_t>(n), cudaMemcpyDeviceToHost));
    for (float d : diagonal)
        if (!(d > 0.0f) || !std::isfinite(d)) return false;
    QS_CUSOLVER(cusolverDnXtrtri(context.solver(), CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_NON_UNIT, n, CUDA_R_32F, work, n,
                                 deviceWork.data(), trtriDevice, hostWork.data(), trtriHost, info.data()));
    info.download(&status, 1);
    if (status != 0) return false;
    kernels::upperFromReversedInverse(work, n, u);
    return true;
}

std::int64_t gptqDeviceBytes(std::int64_t rows, std::int64_t cols, int blockSize, int groups) {
    // H, its reversed copy and U while factoring; then U, W, the codes, the block's errors, the grids
    // (static ones in the same buffers), the permutation and the row losses. Summed: an upper bound.
    return rows * cols * 5 + cols * cols * 12 + rows * blockSize * 4 + rows * groups * 8 + cols * 4 + rows * 8 +
           (std::int64_t{64} << 20);  // the factorization's workspace, generously
}

quant::QuantizedLinear cudaGptq(const CudaContext& context, const MatrixF& w, MatrixF&& h,
                                const quant::GptqOptions& o) {
    CudaGptqSolver solver(context);
    return quant::quantizeGptq(w, std::move(h), o, solver);
}

}  // namespace qs::gpu
