#include "qs/quant/gptq.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "qs/error.h"
#include "qs/quant/output_error.h"

#include "cpu_gptq_solver.h"

namespace qs::quant {

namespace {

constexpr std::int64_t kCodeTile = 64;  // the codes' transposing copy: tiles of 64 x 64 bytes

// b(r, k) = a(r, perm[k]): the visiting order's columns, rows over the threads.
MatrixF permutedColumns(const MatrixF& a, const std::vector<int>& perm) {
    MatrixF b(a.rows(), a.cols());
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < a.rows(); ++r) {
        const float* src = a.row(r).data();
        float* dst = b.row(r).data();
        for (std::int64_t k = 0; k < a.cols(); ++k) dst[k] = src[perm[static_cast<std::size_t>(k)]];
    }
    return b;
}

// b(i, k) = h(perm[i], perm[k]).
MatrixF permutedBoth(const MatrixF& h, const std::vector<int>& perm) {
    const std::int64_t n = h.rows();
    MatrixF b(n, n);
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
        const float* src = h.row(perm[static_cast<std::size_t>(i)]).data();
        float* dst = b.row(i).data();
        for (std::int64_t k = 0; k < n; ++k) dst[k] = src[perm[static_cast<std::size_t>(k)]];
    }
    return b;
}

// The problem in visiting order (GptqProblem), and H in that order for the solver: dead inputs get
// H_ii = 1 and a zero weight column; static grids come from the uncorrected weights.
GptqProblem prepare(const MatrixF& w, MatrixF& h, const GptqOptions& o, int groupCols, int groups) {
    const std::int64_t rows = w.rows(), cols = w.cols();
    GptqProblem p{.options = o, .groupCols = groupCols, .groups = groups};
    p.w.resize(rows, cols);
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) p.w.row(r) = w.row(r);
    for (std::int64_t c = 0; c < cols; ++c)
        if (h(c, c) == 0.0f) {  // an input never active: its weights cannot matter
            h(c, c) = 1.0f;
            p.w.col(c).setZero();
        }
    p.scales = MatrixF::Zero(rows, groups);
    p.zeros = MatrixF::Zero(rows, groups);
    if (o.staticGroups)
        for (std::int64_t r = 0; r < rows; ++r)
            for (int g = 0; g < groups; ++g) {
                const std::int64_t c0 = static_cast<std::int64_t>(g) * groupCols;
                const auto seg = p.w.row(r).segment(c0, std::min<std::int64_t>(groupCols, cols - c0));
                const GridParams gp = gridParams(seg.minCoeff(), seg.maxCoeff(), o.bits, o.sym, o.rule);
                p.scales(r, g) = gp.scale;
                p.zeros(r, g) = gp.zero;
            }
    p.perm.resize(static_cast<std::size_t>(cols));
    std::iota(p.perm.begin(), p.perm.end(), 0);
    if (o.actOrder) {
        std::stable_sort(p.perm.begin(), p.perm.end(), [&h](int a, int b) { return h(a, a) > h(b, b); });
        p.w = permutedColumns(p.w, p.perm);
        h = permutedBoth(h, p.perm);
    }
    return p;
}

// Damps H (the solver's) until its factorization succeeds, raising dampPercent by dampIncrement
// (GPTQModel's damp_auto_increment); returns the damping used and its λ.
double dampedFactor(GptqSolver& solver, double meanDiag, const GptqOptions& o, double& lambda) {
    double dampPercent = o.dampPercent;
    for (; dampPercent < 1.0; dampPercent += o.dampIncrement) {
        lambda = dampPercent * meanDiag;
        if (solver.factor(lambda)) return dampPercent;
        if (o.dampIncrement <= 0) break;
    }
    throw Error("GPTQ: the Hessian is not positive definite even with damping " + std::to_string(dampPercent));
}

// [cols][rows] in visiting order -> row-major [rows, cols]: a byte transpose, by square tiles (read as
// whole source rows, written as whole destination rows) and blocks of rows over the threads. Column by
// column, the 4 KiB-strided byte stores of a wide layer fall into one L1 set and thrash it.
std::vector<std::uint8_t> originalOrderCodes(const std::vector<std::uint8_t>& codes, const std::vector<int>& perm,
                                             std::int64_t rows, std::int64_t cols) {
    std::vector<std::uint8_t> out(codes.size());
    const std::int64_t rowBlocks = (rows + kCodeTile - 1) / kCodeTile;
#pragma omp parallel for schedule(static)
    for (std::int64_t rb = 0; rb < rowBlocks; ++rb) {
        const std::int64_t r0 = rb * kCodeTile, rn = std::min(kCodeTile, rows - r0);
        std::uint8_t tile[kCodeTile][kCodeTile];
        for (std::int64_t k0 = 0; k0 < cols; k0 += kCodeTile) {
            const std::int64_t kn = std::min(kCodeTile, cols - k0);
            for (std::int64_t k = 0; k < kn; ++k)
                std::memcpy(tile[k], codes.data() + (k0 + k) * rows + r0, static_cast<std::size_t>(rn));
            for (std::int64_t r = 0; r < rn; ++r) {
                std::uint8_t* dst = out.data() + (r0 + r) * cols;
                for (std::int64_t k = 0; k < kn; ++k) dst[perm[static_cast<std::size_t>(k0 + k)]] = tile[k][r];
            }
        }
    }
    return out;
}

void checkGptqInputs(const MatrixF& w, const MatrixF& h, const GptqOptions& o) {
    checkIntOptions(o.bits, o.groupSize, w.cols());
    if (h.rows() != w.cols() || h.cols() != w.cols())
        throw Error("GPTQ: H is [" + std::to_string(h.rows()) + ", " + std::to_string(h.cols()) + "] for " +
                    std::to_string(w.cols()) + " input columns");
    if (o.blockSize <= 0) throw Error("GPTQ: block size must be positive");
}

}  // namespace

QuantizedLinear quantizeGptq(const MatrixF& w, const MatrixF& h, const GptqOptions& o) {
    return quantizeGptq(w, MatrixF(h), o);
}

QuantizedLinear quantizeGptq(const MatrixF& w, MatrixF&& h, const GptqOptions& o) {
    CpuGptqSolver solver;
    return quantizeGptq(w, std::move(h), o, solver);
}

QuantizedLinear quantizeGptq(const MatrixF& w, MatrixF&& h, const GptqOptions& o, GptqSolver& solver) {
    const auto start = std::chrono::steady_clock::now();
    checkGptqInputs(w, h, o);
    const std::int64_t rows = w.rows(), cols = w.cols();
    const int groupCols = o.groupSize < 0 ? static_cast<int>(cols) : o.groupSize;
    const int groups = groupCount(o.groupSize, cols);

    // What the error measurement needs of the caller's H, taken before H is consumed.
    std::vector<bool> dead(static_cast<std::size_t>(cols));
    for (std::int64_t c = 0; c < cols; ++c) dead[static_cast<std::size_t>(c)] = h(c, c) == 0.0f;
    const double ref = o.measureError ? hessianQuadratic(w, h) : 0.0;

    GptqProblem p = prepare(w, h, o, groupCols, groups);
    const double meanDiag = h.diagonal().cast<double>().mean();  // in visiting order, as the references sum it
    solver.takeHessian(p, std::move(h));
    QuantizedLinear q = QuantizedLinear::intGrid(Method::Gptq, rows, cols, o.bits, o.groupSize, o.sym);
    double lambda = 0.0;
    q.dampPercent = dampedFactor(solver, meanDiag, o, lambda);

    std::vector<std::uint8_t> codes(static_cast<std::size_t>(rows * cols));
    const double lossSum = solver.columnLoop(p, codes);
    q.codes = originalOrderCodes(codes, p.perm, rows, cols);
    codes = {};
    q.scales = std::move(p.scales);
    q.zeros = std::move(p.zeros);
    if (o.actOrder && !o.staticGroups) {
        q.gIdx.resize(static_cast<std::size_t>(cols));
        for (std::int64_t k = 0; k < cols; ++k)
            q.gIdx[static_cast<std::size_t>(p.perm[static_cast<std::size_t>(k)])] =
                static_cast<std::int32_t>(k / groupCols);
    }
    q.gptqLoss = o.samples > 0 ? lossSum / o.samples : lossSum;
    if (o.measureError) {
        // Σ ½ err² = ½ tr(D (H + λI) Dᵀ): remove the damping to get the error on the inputs.
        // Dead columns were quantized from zero; their H row and column are zero, so they add nothing.
        MatrixF d = w - q.dequantize();
        for (std::int64_t c = 0; c < cols; ++c)
            if (dead[static_cast<std::size_t>(c)]) d.col(c).setZero();
        const double dampTerm = 0.5 * lambda * d.cast<double>().squaredNorm();
        const double err2 = std::max(lossSum - dampTerm, 0.0);
        q.outputMse = err2 / static_cast<double>(rows);
        q.outputError = ref > 0 ? std::sqrt(err2 / ref) : std::numeric_limits<double>::quiet_NaN();
    }
    q.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return q;
}

}  // namespace qs::quant
