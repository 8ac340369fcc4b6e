#include "cuda_gptq.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "cuda_check.h"
#include "gptq_kernels.h"
#include "qs/error.h"
#include "qs/gpu/device_buffer.h"
#include "qs/gpu/device_info.h"
#include "qs/quant/output_error.h"

namespace qs::gpu {
namespace {

constexpr std::int64_t kBlocksPerCancelPoll = 4;   // 512 columns: milliseconds on any device

// What the column loop starts from, as gptq.cpp prepare() builds it: weights and H in visiting
// order, dead inputs (H_ii == 0) with H_ii = 1 and zero weights, static grids from the uncorrected
// weights in the original column order.
struct Prepared {
    MatrixF w;
    MatrixF h;
    std::vector<int> perm;
    MatrixF staticScales;   // [rows, groups] when static groups
    MatrixF staticZeros;
};

Prepared prepare(const MatrixF& w, const MatrixF& h, const quant::GptqOptions& o, int groupCols, int groups) {
    const std::int64_t cols = w.cols();
    Prepared p;
    p.w = w;
    MatrixF hf = h;
    for (std::int64_t c = 0; c < cols; ++c)
        if (hf(c, c) == 0.0f) {
            hf(c, c) = 1.0f;
            p.w.col(c).setZero();
        }
    if (o.staticGroups) {
        p.staticScales.resize(w.rows(), groups);
        p.staticZeros.resize(w.rows(), groups);
        for (std::int64_t r = 0; r < w.rows(); ++r)
            for (int g = 0; g < groups; ++g) {
                const std::int64_t c0 = static_cast<std::int64_t>(g) * groupCols;
                const auto seg = p.w.row(r).segment(c0, std::min<std::int64_t>(groupCols, cols - c0));
                const quant::GridParams gp = quant::gridParams(seg.minCoeff(), seg.maxCoeff(), o.bits, o.sym, o.rule);
                p.staticScales(r, g) = gp.scale;
                p.staticZeros(r, g) = gp.zero;
            }
    }
    p.perm.resize(static_cast<std::size_t>(cols));
    std::iota(p.perm.begin(), p.perm.end(), 0);
    if (o.actOrder) {
        std::stable_sort(p.perm.begin(), p.perm.end(), [&hf](int a, int b) { return hf(a, a) > hf(b, b); });
        p.w = MatrixF(p.w(Eigen::all, p.perm));
        p.h = hf(p.perm, p.perm);
    } else {
        p.h = std::move(hf);
    }
    return p;
}

// The device buffers of one GPTQ run.
struct Workspace {
    DeviceBuffer<float> w, h, u, work, err, scales, zeros, staticScales, staticZeros;
    DeviceBuffer<std::uint8_t> codes;
    DeviceBuffer<int> perm;
    DeviceBuffer<double> loss;

};

// Damps H until its factorization succeeds (gptq.cpp dampedInverseFactor): U in ws.u.
void dampedInverseFactor(const CudaContext& context, const Prepared& p, const quant::GptqOptions& o, Workspace& ws,
                         double& dampPercent, double& lambda) {
    const double meanDiag = p.h.diagonal().cast<double>().mean();
    const std::int64_t n = p.h.rows();
    for (dampPercent = o.dampPercent; dampPercent < 1.0; dampPercent += o.dampIncrement) {
        lambda = dampPercent * meanDiag;
        if (upperCholeskyOfInverseOnDevice(context, ws.h.data(), n, static_cast<float>(lambda), ws.work.data(), ws.u.data()))
            return;
        if (o.dampIncrement <= 0) break;
    }
    throw Error("GPTQ: the Hessian is not positive definite even with damping " + std::to_string(dampPercent));
}

void runColumnLoop(const CudaContext& context, const quant::GptqOptions& o, const Prepared& p, int groupCols,
                   int groups, Workspace& ws) {
    const std::int64_t rows = p.w.rows(), cols = p.w.cols();
    kernels::GptqBlockArgs args{};
    args.w = ws.w.data();
    args.u = ws.u.data();
    args.err = ws.err.data();
    args.codes = ws.codes.data();
    args.scales = ws.scales.data();
    args.zeros = ws.zeros.data();
    args.staticScales = o.staticGroups ? ws.staticScales.data() : nullptr;
    args.staticZeros = o.staticGroups ? ws.staticZeros.data() : nullptr;
    args.perm = ws.perm.data();
    args.loss = ws.loss.data();
    args.rows = rows;
    args.cols = cols;
    args.groupCols = groupCols;
    args.groups = groups;
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
        QS_CUBLAS(cublasSgemm_64(context.blas(), CUBLAS_OP_N, CUBLAS_OP_T, cols - i2, rows, bw, &minusOne,
                                 ws.u.data() + i1 * cols + i2, cols, ws.err.data(), rows, &one, ws.w.data() + i2, cols));
    }
}

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
    QS_CUSOLVER(cusolverDnXtrtri_bufferSize(context.solver(), CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_NON_UNIT, n, CUDA_R_32F,
                                            work, n, &trtriDevice, &trtriHost));
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
    return rows * cols * 5 + cols * cols * 12 + rows * blockSize * 4 + rows * groups * 16 + cols * 4 + rows * 8 +
           (std::int64_t{64} << 20);   // the factorization's workspace, generously
}

quant::QuantizedLinear cudaGptq(const CudaContext& context, const MatrixF& w, const MatrixF& h,
                                const quant::GptqOptions& o) {
    const auto start = std::chrono::steady_clock::now();
    quant::checkIntOptions(o.bits, o.groupSize, w.cols());
    if (h.rows() != w.cols() || h.cols() != w.cols())
        throw Error("GPTQ: H is [" + std::to_string(h.rows()) + ", " + std::to_string(h.cols()) + "] for " +
                    std::to_string(w.cols()) + " input columns");
    if (o.blockSize <= 0) throw Error("GPTQ: block size must be positive");
    if (o.blockSize > kernels::kGptqMaxBlock)
        throw Error("GPTQ on CUDA: block size " + std::to_string(o.blockSize) + " is above the kernel's " +
                    std::to_string(kernels::kGptqMaxBlock));
    const std::int64_t rows = w.rows(), cols = w.cols();
    const int groupCols = o.groupSize < 0 ? static_cast<int>(cols) : o.groupSize;
    const int groups = quant::groupCount(o.groupSize, cols);
    requireDeviceMemory(gptqDeviceBytes(rows, cols, o.blockSize, groups),
                        "GPTQ of a [" + std::to_string(rows) + ", " + std::to_string(cols) + "] layer");

    const Prepared p = prepare(w, h, o, groupCols, groups);
    Workspace ws;
    ws.h = DeviceBuffer<float>(p.h.data(), p.h.size());
    ws.u = DeviceBuffer<float>(cols * cols);
    ws.work = DeviceBuffer<float>(cols * cols);
    quant::QuantizedLinear q;
    double lambda = 0.0;
    dampedInverseFactor(context, p, o, ws, q.dampPercent, lambda);
    ws.h = DeviceBuffer<float>();   // H is not needed past the factorization

    q.method = quant::Method::Gptq;
    q.codeKind = quant::CodeKind::UnsignedInt;
    q.rows = rows;
    q.cols = cols;
    q.bits = o.bits;
    q.groupSize = o.groupSize;
    q.symmetric = o.sym;
    q.blockRows = 1;
    q.blockCols = groupCols;
    q.scales = o.staticGroups ? p.staticScales : MatrixF(MatrixF::Zero(rows, groups));
    q.zeros = o.staticGroups ? p.staticZeros : MatrixF(MatrixF::Zero(rows, groups));

    ws.w = DeviceBuffer<float>(p.w.data(), p.w.size());
    ws.err = DeviceBuffer<float>(rows * o.blockSize);
    ws.codes = DeviceBuffer<std::uint8_t>(rows * cols);
    ws.scales = DeviceBuffer<float>(q.scales.data(), q.scales.size());
    ws.zeros = DeviceBuffer<float>(q.zeros.data(), q.zeros.size());
    if (o.staticGroups) {
        ws.staticScales = DeviceBuffer<float>(p.staticScales.data(), p.staticScales.size());
        ws.staticZeros = DeviceBuffer<float>(p.staticZeros.data(), p.staticZeros.size());
    }
    ws.perm = DeviceBuffer<int>(p.perm.data(), cols);
    ws.loss = DeviceBuffer<double>(rows);
    ws.loss.fillZero();
    runColumnLoop(context, o, p, groupCols, groups, ws);

    std::vector<std::uint8_t> codes(static_cast<std::size_t>(rows * cols));
    ws.codes.download(codes.data(), rows * cols);
    ws.scales.download(q.scales.data(), q.scales.size());
    ws.zeros.download(q.zeros.data(), q.zeros.size());
    std::vector<double> rowLoss(static_cast<std::size_t>(rows));
    ws.loss.download(rowLoss.data(), rows);
    const double lossSum = 0.5 * std::accumulate(rowLoss.begin(), rowLoss.end(), 0.0);

    q.codes.resize(codes.size());
    for (std::int64_t k = 0; k < cols; ++k) {
        const std::int64_t c = p.perm[static_cast<std::size_t>(k)];
        for (std::int64_t r = 0; r < rows; ++r)
            q.codes[static_cast<std::size_t>(r * cols + c)] = codes[static_cast<std::size_t>(k * rows + r)];
    }
    if (o.actOrder && !o.staticGroups) {
        q.gIdx.resize(static_cast<std::size_t>(cols));
        for (std::int64_t k = 0; k < cols; ++k)
            q.gIdx[static_cast<std::size_t>(p.perm[static_cast<std::size_t>(k)])] = static_cast<std::int32_t>(k / groupCols);
    }
    q.gptqLoss = o.samples > 0 ? lossSum / o.samples : lossSum;
    if (o.measureError) {
        // As quantizeGptq: Σ ½ err² = ½ tr(D (H + λI) Dᵀ), less the damping term.
        MatrixF d = w - q.dequantize();
        for (std::int64_t c = 0; c < cols; ++c)
            if (h(c, c) == 0.0f) d.col(c).setZero();
        const double dampTerm = 0.5 * lambda * d.cast<double>().squaredNorm();
        const double err2 = std::max(lossSum - dampTerm, 0.0);
        const double ref = quant::hessianQuadratic(w, h);
        q.outputMse = err2 / static_cast<double>(rows);
        q.outputError = ref > 0 ? std::sqrt(err2 / ref) : std::numeric_limits<double>::quiet_NaN();
    }
    q.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return q;
}

}  // namespace qs::gpu
