#include "cuda_awq.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "qs/error.h"
#include "qs/gpu/device_buffer.h"
#include "qs/gpu/device_info.h"

#include "awq_kernels.h"
#include "cuda_check.h"

namespace qs::gpu {
namespace {

constexpr std::int64_t kHeadroom = std::int64_t{64} << 20;  // cuBLAS's workspace and the allocator's rounding

std::int64_t stackedRows(const std::vector<const MatrixF*>& weights) {
    std::int64_t rows = 0;
    for (const MatrixF* w : weights) rows += w->rows();
    return rows;
}

// D, D·H and the row errors of one α over every linear, and its scales.
std::int64_t bytesPerCandidate(std::int64_t rows, std::int64_t cols) { return rows * cols * 8 + rows * 8 + cols * 4; }

// How many α fit at once next to W and H (queried before anything is allocated); a qs::Error naming
// the bytes needed and free when not even one does.
std::int64_t candidatesPerPass(std::int64_t rows, std::int64_t cols, int grid) {
    const std::int64_t fixed = rows * cols * 4 + cols * cols * 4 + kHeadroom;
    const std::int64_t each = bytesPerCandidate(rows, cols);
    requireDeviceMemory(awqMinimumDeviceBytes(rows, cols), "the AWQ search of " + std::to_string(rows) + " x " +
                                                               std::to_string(cols) + " weights (one α at a time)");
    std::size_t freeBytes = 0, totalBytes = 0;
    QS_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
    return std::clamp<std::int64_t>((static_cast<std::int64_t>(freeBytes) - fixed) / each, 1, grid);
}

struct Workspace {
    DeviceBuffer<float> w, h, s, d, dh;
    DeviceBuffer<double> rowErrors;
};

Workspace upload(const std::vector<const MatrixF*>& weights, const MatrixF& h, std::int64_t rows, std::int64_t batch) {
    const std::int64_t cols = h.cols();
    Workspace ws;
    ws.w = DeviceBuffer<float>(rows * cols);
    std::int64_t offset = 0;
    for (const MatrixF* w : weights) {
        ws.w.upload(w->data(), w->size(), offset);
        offset += w->size();
    }
    ws.h = DeviceBuffer<float>(h.data(), h.size());
    ws.s = DeviceBuffer<float>(batch * cols);
    ws.d = DeviceBuffer<float>(batch * rows * cols);
    ws.dh = DeviceBuffer<float>(batch * rows * cols);
    ws.rowErrors = DeviceBuffer<double>(batch * rows);
    return ws;
}

// ½ d_m H d_mᵀ for every row m of D [m, cols] (row-major, on the device), through the scratch dh and
// rowErrors. Row-major D is Dᵀ column-major, so (D H)ᵀ = Hᵀ Dᵀ needs no transposes: Hᵀ is row-major H.
std::vector<double> halfQuadraticRows(const CudaContext& context, const float* h, const float* d, std::int64_t m,
                                      std::int64_t cols, float* dh, double* rowErrors) {
    const float one = 1.0f, zero = 0.0f;
    QS_CUBLAS(cublasSgemm_64(context.blas(), CUBLAS_OP_N, CUBLAS_OP_N, cols, m, cols, &one, h, cols, d, cols, &zero, dh,
                             cols));
    kernels::halfRowDots(dh, d, m, cols, rowErrors);
    std::vector<double> out(static_cast<std::size_t>(m));
    QS_CUDA(cudaMemcpy(out.data(), rowErrors, out.size() * sizeof(double), cudaMemcpyDeviceToHost));
    return out;
}

// ½ d_m H d_mᵀ for every stacked row m of the α steps [first, first + count).
std::vector<double> passRowErrors(const CudaContext& context, Workspace& ws, const VectorF& meanAbs,
                                  const quant::AwqOptions& o, std::int64_t rows, int first, int count) {
    const std::int64_t cols = meanAbs.size();
    for (int k = 0; k < count; ++k) {
        const std::vector<float> s = quant::awqScales(meanAbs, static_cast<double>(first + k) / o.grid);
        ws.s.upload(s.data(), cols, k * cols);
    }
    kernels::awqFakeQuantError({ws.w.data(), ws.s.data(), ws.d.data(), count, rows, cols,
                                o.groupSize < 0 ? cols : o.groupSize, o.bits, o.sym});
    return halfQuadraticRows(context, ws.h.data(), ws.d.data(), count * rows, cols, ws.dh.data(), ws.rowErrors.data());
}

// Σ over the linears of their mean row error (Calibration::mse through H), for one α.
double candidateError(const std::vector<const MatrixF*>& weights, const double* rowErrors) {
    double error = 0.0;
    for (const MatrixF* w : weights) {
        double sum = 0.0;
        for (std::int64_t r = 0; r < w->rows(); ++r) sum += rowErrors[r];
        error += sum / static_cast<double>(w->rows());
        rowErrors += w->rows();
    }
    return error;
}

// hessianQuadratic(d, H) with H kept on the device across calls: the finish's output errors.
class DeviceQuadratic {
public:
    DeviceQuadratic(const CudaContext& context, const MatrixF& h)
        : context_(context), h_(h.data(), h.size()), n_(h.cols()) {}

    double operator()(const MatrixF& d) {
        const std::int64_t rows = d.rows();
        if (d_.size() < d.size()) {
            d_ = DeviceBuffer<float>();
            dh_ = DeviceBuffer<float>();
            requireDeviceMemory(d.size() * 8 + rows * 8, "AWQ's output error of a [" + std::to_string(rows) + ", " +
                                                             std::to_string(n_) + "] weight");
            d_ = DeviceBuffer<float>(d.size());
            dh_ = DeviceBuffer<float>(d.size());
            rowErrors_ = DeviceBuffer<double>(rows);
        }
        d_.upload(d.data(), d.size());
        double sum = 0.0;
        for (double e : halfQuadraticRows(context_, h_.data(), d_.data(), rows, n_, dh_.data(), rowErrors_.data()))
            sum += e;
        return sum;
    }

private:
    const CudaContext& context_;
    DeviceBuffer<float> h_, d_, dh_;
    DeviceBuffer<double> rowErrors_;
    std::int64_t n_;
};

}  // namespace

std::int64_t awqMinimumDeviceBytes(std::int64_t rows, std::int64_t cols) {
    return rows * cols * 4 + cols * cols * 4 + kHeadroom + bytesPerCandidate(rows, cols);
}

bool awqRunsOnDevice(const std::vector<const MatrixF*>& weights, const VectorF& meanAbs, const MatrixF& h,
                     const quant::AwqOptions& o) {
    const std::int64_t cols = meanAbs.size();
    if (o.rule != quant::GridRule::AutoAwq || o.bits < 2 || o.bits > 8 || o.grid <= 0) return false;
    if ((o.groupSize <= 0 && o.groupSize != -1) || cols == 0 || h.rows() != cols || h.cols() != cols) return false;
    if (weights.empty()) return false;
    return std::all_of(weights.begin(), weights.end(),
                       [cols](const MatrixF* w) { return w && w->cols() == cols && w->rows() > 0; });
}

std::vector<double> cudaAwqGridErrors(const CudaContext& context, const std::vector<const MatrixF*>& weights,
                                      const VectorF& meanAbs, const MatrixF& h, const quant::AwqOptions& o,
                                      int maxPerPass) {
    if (!awqRunsOnDevice(weights, meanAbs, h, o))
        throw Error("AWQ: these options or shapes are not searched on the device");
    const std::int64_t rows = stackedRows(weights);
    const int fit = static_cast<int>(candidatesPerPass(rows, meanAbs.size(), o.grid));
    const int batch = maxPerPass > 0 ? std::min(fit, maxPerPass) : fit;
    Workspace ws = upload(weights, h, rows, batch);
    std::vector<double> gridError;
    for (int first = 0; first < o.grid; first += batch) {
        const int count = std::min(batch, o.grid - first);
        const std::vector<double> rowErrors = passRowErrors(context, ws, meanAbs, o, rows, first, count);
        for (int k = 0; k < count; ++k) gridError.push_back(candidateError(weights, rowErrors.data() + k * rows));
    }
    return gridError;
}

quant::AwqResult cudaAwq(const CudaContext& context, const std::vector<const MatrixF*>& weights, const VectorF& meanAbs,
                         const MatrixF& h, const quant::AwqOptions& o) {
    // Another grid rule, or what the CPU rejects (its error is the one to give): the CPU search.
    if (!awqRunsOnDevice(weights, meanAbs, h, o)) return quant::quantizeAwqFromStats(weights, meanAbs, h, o);
    const auto start = std::chrono::steady_clock::now();
    std::vector<double> gridError = cudaAwqGridErrors(context, weights, meanAbs, h, o);
    auto quadratic = std::make_shared<DeviceQuadratic>(context, h);  // after the grid's workspace is freed
    quant::AwqResult result = quant::awqFromGridErrors(weights, meanAbs, h, std::move(gridError), o,
                                                       [quadratic](const MatrixF& d) { return (*quadratic)(d); });
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (quant::QuantizedLinear& q : result.linears)
        q.seconds = result.seconds / static_cast<double>(result.linears.size());
    return result;
}

}  // namespace qs::gpu
