#include "cpu_gptq_solver.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "qs/eigen.h"
#include "qs/quant/gptq.h"
#include "qs/quant/rtn.h"

#include "gptq_column_kernels.h"

namespace qs::quant {

namespace {

using ColMatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
constexpr std::int64_t kFactorBlock = 128;    // panel width of the Cholesky
constexpr std::int64_t kTile = 256;           // rows per task of the panels' updates and solves
constexpr std::int64_t kRowChunk = 32;        // rows per task of the column loop (its block fits in L1/L2)
constexpr std::int64_t kFlatChunk = 1 << 20;  // values per task of the whole-matrix copies

// The factorization is tiled here rather than left to LAPACK's spotrf and strtri, which OpenBLAS
// carries and runs 1.2-1.5x faster on one 4096-wide H: each tile is computed by one thread (OpenBLAS
// runs single-threaded inside our parallel regions), so the bits do not depend on the team's size,
// which follows the free cores. OpenBLAS's threaded spotrf blocks differently for each team size, and
// the same settings run twice would give other codes on a busier machine.

// J H J for symmetric H (J reverses the order): element (i, j) comes from (n-1-i, n-1-j), whose flat
// index in an n x n buffer is n² - 1 minus that of (i, j), in either storage order. So it is the
// buffer read backwards: a streaming copy, over the threads.
MatrixF reversed(const MatrixF& h) {
    const std::int64_t count = h.size();
    MatrixF a(h.rows(), h.cols());
    const float* src = h.data();
    float* dst = a.data();
#pragma omp parallel for schedule(static)
    for (std::int64_t c0 = 0; c0 < count; c0 += kFlatChunk) {
        const std::int64_t c1 = std::min(count, c0 + kFlatChunk);
        for (std::int64_t k = c0; k < c1; ++k) dst[k] = src[count - 1 - k];
    }
    return a;
}

// The buffer read backwards, in place (each task swaps a chunk of the first half with its mirror).
void reverseInPlace(MatrixF& a) {
    const std::int64_t count = a.size(), half = count / 2;
    float* p = a.data();
#pragma omp parallel for schedule(static)
    for (std::int64_t c0 = 0; c0 < half; c0 += kFlatChunk) {
        const std::int64_t c1 = std::min(half, c0 + kFlatChunk);
        for (std::int64_t k = c0; k < c1; ++k) std::swap(p[k], p[count - 1 - k]);
    }
}

// The strict upper triangle copied onto the strict lower one, by square tiles over the threads.
void mirrorUpperToLower(MatrixF& a) {
    const std::int64_t n = a.rows(), tiles = (n + kFactorBlock - 1) / kFactorBlock;
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t i = 0; i < tiles; ++i)
        for (std::int64_t j = 0; j <= i; ++j) {
            const std::int64_t r0 = i * kFactorBlock, c0 = j * kFactorBlock;
            const std::int64_t nr = std::min(kFactorBlock, n - r0), nc = std::min(kFactorBlock, n - c0);
            for (std::int64_t r = 0; r < nr; ++r)
                for (std::int64_t c = 0; c < nc && c0 + c < r0 + r; ++c) a(r0 + r, c0 + c) = a(c0 + c, r0 + r);
        }
}

// The panel's columns [k, k + b) from row k down, brought up to date with every column before it:
// A[k:, k:k+b] -= L[k:, :k] L[k:k+b, :k]ᵀ, by tiles of rows over the threads (each tile one GEMM whose
// inner dimension is k, all the columns done: left-looking, so it runs near the SGEMM rate where a
// right-looking update's inner dimension would be the panel's 128). The diagonal block's strict upper
// part is put back: a damping retry rebuilds the matrix from it.
void updatePanel(MatrixF& a, std::int64_t k, std::int64_t b) {
    const std::int64_t n = a.rows(), chunks = (n - k + kTile - 1) / kTile;
    const ColMatrixF upper = a.block(k, k, b, b).triangularView<Eigen::StrictlyUpper>();
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t c = 0; c < chunks; ++c) {
        const std::int64_t r = k + c * kTile, nr = std::min(kTile, n - r);
        a.block(r, k, nr, b).noalias() -= a.block(r, 0, nr, k) * a.block(k, 0, b, k).transpose();
    }
    a.block(k, k, b, b).triangularView<Eigen::StrictlyUpper>() = upper;
}

// Left-looking blocked Cholesky A = L Lᵀ in place (lower triangle; the strict upper one is not
// written); false if A is not positive definite.
bool choleskyLower(MatrixF& a) {
    const std::int64_t n = a.rows();
    for (std::int64_t k = 0; k < n; k += kFactorBlock) {
        const std::int64_t b = std::min(kFactorBlock, n - k);
        if (k > 0) updatePanel(a, k, b);
        Eigen::LLT<ColMatrixF> llt(a.block(k, k, b, b));
        if (llt.info() != Eigen::Success) return false;
        a.block(k, k, b, b).triangularView<Eigen::Lower>() = llt.matrixL();
        const std::int64_t rem = n - k - b;
        const std::int64_t chunks = (rem + kTile - 1) / kTile;
#pragma omp parallel for schedule(dynamic, 1)
        for (std::int64_t c = 0; c < chunks; ++c) {
            const std::int64_t r = k + b + c * kTile, nr = std::min(kTile, n - r);
            auto panel = a.block(r, k, nr, b);
            llt.matrixU().solveInPlace<Eigen::OnTheRight>(panel);  // A21 L11⁻ᵀ
        }
    }
    return true;
}

bool positiveDiagonal(const MatrixF& l) {
    for (std::int64_t i = 0; i < l.rows(); ++i)
        if (!(l(i, i) > 0.0f) || !std::isfinite(l(i, i))) return false;
    return true;
}

// `a` = B = J (H + λI) J on entry; on success the upper triangular M with H + λI = M Mᵀ.
//
// B = L Lᵀ, so H + λI = J L Lᵀ J = (J L J)(J L J)ᵀ and M = J L J: M(i, j) = L(n-1-i, n-1-j), at flat
// index n² - 1 minus that of (i, j) in the same row-major storage. M is L's buffer read backwards, once
// L's unwritten upper triangle (M's lower) is zeroed. GPTQ's U (H⁻¹ = UᵀU, the paper's upper Cholesky
// factor of the inverse) is M⁻¹; the column loop works with M and never forms the inverse.
bool upperFactorInPlace(MatrixF& a) {
    if (!choleskyLower(a) || !positiveDiagonal(a)) return false;
    const std::int64_t n = a.rows();
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) std::fill(a.row(i).data() + i + 1, a.row(i).data() + n, 0.0f);
    reverseInPlace(a);
    return true;
}

// GPTQ with U = M⁻¹ corrects each later column j by -e_i U_ij once column i is quantized (e_i = (w_i -
// q_i) / U_ii). Summed, column j reaches its turn as
//     w_j + (Σ_{i<j} δ_i M_ij) / M_jj,   δ_i = w_i - q_i  (the original weight minus its quantized value),
// and e_i = (that corrected w_i - q_i) · M_ii. So the loop keeps every column's δ (in place of its
// weights, which nothing reads again) and, for each block of columns, acc_j = Σ_{i<j} δ_i M_ij: the
// blocks before contribute by one GEMM as the block begins
// (left-looking: its inner dimension is every column done, where the right-looking lazy update's is the
// block's 128, so it runs at the SGEMM rate instead of streaming the whole matrix through memory once
// per block), the block's own columns by rank-one updates. Where a group's grid needs the corrected
// weights of columns not reached yet (X = its columns from the one being quantized), they are the
// one-column-at-a-time algorithm's: w_X + acc_X M_XX⁻¹ (the leading block of an upper triangular
// inverse is the inverse of the leading block).
struct LoopState {
    const GptqOptions& o;
    const GptqProblem& p;  // p.w: the original weights in visiting order; a column done holds its δ
    const MatrixF& m;
    const ColMatrixF& acc;  // [rows, reach - i1]: Σ δ_i M_ij over the blocks done, for the block's columns j
                            // and those after it that a group beginning in the block reads
    const ColMatrixF& ub;   // the block's M_BB⁻¹ (U's block), for the groups' corrected weights
    MatrixF& w;             // p.w, where each block's δ replaces its weights once the block is done
    float maxq;
    std::vector<std::uint8_t>& codes;  // [cols][rows], visiting order
    MatrixF& scales;
    MatrixF& zeros;
    // GPTAQ (null for GPTQ): P, and like acc, corr = Σ v_i P_ij over the blocks done for the block's
    // columns and those its groups read; v holds each column done's quantized value.
    const MatrixF* correction = nullptr;
    const ColMatrixF* corr = nullptr;
    MatrixF* v = nullptr;
};

// y = acc_X M_XX⁻¹ for a group's columns X = [col, col + width) and the chunk's rows, acc_X as it is
// with the block's columns before `col` done (`a`: the chunk's acc over the block). Over the block's
// columns it is one product with the block's inverse; a group that runs past the block continues by
// forward substitution, y_c = (acc_c - Σ_{k<c} y_k M_kc) / M_cc, columns outer and rows vectorised.
ColMatrixF groupCorrections(const LoopState& s, std::int64_t i1, std::int64_t i2, std::int64_t i, std::int64_t r0,
                            std::int64_t nr, const ColMatrixF& a, const ColMatrixF& delta, std::int64_t width) {
    const std::int64_t col = i1 + i, inBlock = std::min(col + width, i2) - col;
    ColMatrixF y(nr, width);
    y.leftCols(inBlock).noalias() = a.middleCols(i, inBlock) * s.ub.block(i, i, inBlock, inBlock);
    for (std::int64_t x = inBlock; x < width; ++x) {
        const std::int64_t c = col + x;
        float* yc = y.col(x).data();
        for (std::int64_t r = 0; r < nr; ++r) yc[r] = s.acc(r0 + r, c - i1);
        for (std::int64_t k = i1; k < col; ++k) {  // the block's columns done so far
            const float mk = s.m(k, c);
            const float* dk = delta.col(k - i1).data();
#pragma omp simd
            for (std::int64_t r = 0; r < nr; ++r) yc[r] += dk[r] * mk;
        }
        for (std::int64_t k = 0; k < x; ++k) {
            const float mk = s.m(col + k, c);
            const float* yk = y.col(k).data();
#pragma omp simd
            for (std::int64_t r = 0; r < nr; ++r) yc[r] -= yk[r] * mk;
        }
        const float inv = 1.0f / s.m(c, c);
#pragma omp simd
        for (std::int64_t r = 0; r < nr; ++r) yc[r] *= inv;
    }
    return y;
}

// The grid of a group beginning at block column i, for the chunk's rows: the range of the corrected
// weights over its columns [col, groupEnd) as the one-column-at-a-time algorithm has them now.
void groupGrid(const LoopState& s, std::int64_t i1, std::int64_t i2, std::int64_t i, std::int64_t r0, std::int64_t nr,
               const ColMatrixF& w0, const ColMatrixF& a, const ColMatrixF& delta, const ColMatrixF& corr, int g,
               float* scale, float* zero) {
    const std::int64_t col = i1 + i, cols = s.p.w.cols();
    const std::int64_t groupEnd = std::min<std::int64_t>(static_cast<std::int64_t>(g + 1) * s.p.groupCols, cols);
    // Nothing is done before column 0: its group's weights are uncorrected (one group per row spans them all).
    const ColMatrixF y = col == 0 ? ColMatrixF() : groupCorrections(s, i1, i2, i, r0, nr, a, delta, groupEnd - col);
    const auto value = [&](std::int64_t r, std::int64_t c) {
        float w = c < i2 ? w0(r, c - i1) : s.p.w(r0 + r, c);
        // GPTAQ: as the column will be quantized from. corr reaches every column a grid reads but at
        // column 0 (blockReach), where nothing is done and corr is zero.
        if (c - i1 < corr.cols()) w += corr(r, c - i1);
        return y.size() == 0 ? w : w + y(r, c - col);
    };
    float low[kRowChunk], high[kRowChunk];
    for (std::int64_t r = 0; r < nr; ++r) low[r] = high[r] = value(r, col);
    for (std::int64_t c = col + 1; c < groupEnd; ++c)
        for (std::int64_t r = 0; r < nr; ++r) {
            const float v = value(r, c);
            low[r] = std::min(low[r], v);
            high[r] = std::max(high[r], v);
        }
    for (std::int64_t r = 0; r < nr; ++r) {
        const GridParams gp = gridParams(low[r], high[r], s.o.bits, s.o.sym, s.o.rule);
        scale[r] = gp.scale;
        zero[r] = gp.zero;
        s.scales(r0 + r, g) = gp.scale;
        s.zeros(r0 + r, g) = gp.zero;
    }
}

// Σ e² in double, in order (its own function, so the sum stays in a register).
double sumOfSquares(const float* e, std::int64_t n) {
    double sum = 0.0;
    for (std::int64_t r = 0; r < n; ++r) sum += static_cast<double>(e[r]) * static_cast<double>(e[r]);
    return sum;
}

// GPTAQ after column `col` (block column i) is quantized: its quantized value into v (the weights it
// was quantized from, less its δ), and the weights it was quantized from (`w` corrected by GPTQ's
// acc / M_jj, as the column kernel computes them) times P's row onto corr's later columns. GPTQModel
// moves the block's later columns by those weights and the columns past the block by the quantized
// value (its GEMM reads the block once quantized); corr's columns past the block are read only by a
// group's grid, and the next block's GEMM recomputes them from v.
void correctLaterColumns(const LoopState& s, std::int64_t col, std::int64_t i, std::int64_t r0, std::int64_t nr,
                         const float* acc, const float* delta, const float* w, ColMatrixF& corr) {
    const float inv = 1.0f / s.m(col, col);
    float quantizedFrom[kRowChunk];
    for (std::int64_t r = 0; r < nr; ++r) {
        quantizedFrom[r] = w[r] + acc[r] * inv;
        (*s.v)(r0 + r, col) = w[r] - delta[r];
    }
    const std::int64_t later = corr.cols() - i - 1;
    if (later > 0)
        pushColumnError(corr.col(i + 1).data(), corr.outerStride(), nr, quantizedFrom,
                        s.correction->row(col).data() + col + 1, later);
}

// One row chunk of one block: the block-internal column loop, with rank-one updates of acc inside the
// block. Writes the block's δ over its weights in s.w (its rows r0..r0+nr).
double blockChunk(const LoopState& s, std::int64_t i1, std::int64_t i2, std::int64_t r0, std::int64_t nr) {
    const std::int64_t bw = i2 - i1, rows = s.p.w.rows();
    const ColMatrixF w0 = s.p.w.block(r0, i1, nr, bw);
    ColMatrixF a = s.acc.block(r0, 0, nr, bw);
    ColMatrixF delta(nr, bw);
    ColMatrixF corr = s.corr != nullptr ? ColMatrixF(s.corr->middleRows(r0, nr)) : ColMatrixF();
    float scale[kRowChunk], zero[kRowChunk];
    double loss = 0.0;
    int currentGroup = -1;
    for (std::int64_t i = 0; i < bw; ++i) {
        const std::int64_t col = i1 + i;
        const int g = static_cast<int>(col / s.p.groupCols);
        if (s.o.staticGroups) {
            const int sg = s.p.perm[static_cast<std::size_t>(col)] / s.p.groupCols;
            for (std::int64_t r = 0; r < nr; ++r) {
                scale[r] = s.p.scales(r0 + r, sg);
                zero[r] = s.p.zeros(r0 + r, sg);
            }
        } else if (g != currentGroup && col % s.p.groupCols != 0) {
            currentGroup = g;  // a group that began in an earlier block: its grid is already known
            for (std::int64_t r = 0; r < nr; ++r) {
                scale[r] = s.scales(r0 + r, g);
                zero[r] = s.zeros(r0 + r, g);
            }
        } else if (g != currentGroup) {
            currentGroup = g;
            groupGrid(s, i1, i2, i, r0, nr, w0, a, delta, corr, g, scale, zero);
        }
        float e[kRowChunk], shifted[kRowChunk];  // GPTAQ: the weights with its correction, which it quantizes
        if (corr.size() != 0)
            for (std::int64_t r = 0; r < nr; ++r) shifted[r] = w0(r, i) + corr(r, i);
        quantizeGptqColumn({.w = corr.size() != 0 ? shifted : w0.col(i).data(),
                            .acc = a.col(i).data(),
                            .scale = scale,
                            .zero = zero,
                            .mjj = s.m(col, col),
                            .maxq = s.maxq,
                            .rows = nr,
                            .codes = s.codes.data() + col * rows + r0,
                            .delta = delta.col(i).data(),
                            .error = e});
        loss += sumOfSquares(e, nr);
        if (corr.size() != 0)
            correctLaterColumns(s, col, i, r0, nr, a.col(i).data(), delta.col(i).data(), shifted, corr);
        if (i + 1 < bw)
            pushColumnError(a.col(i + 1).data(), a.outerStride(), nr, delta.col(i).data(),
                            s.m.row(col).data() + col + 1, bw - i - 1);
    }
    s.w.block(r0, i1, nr, bw) = delta;
    return 0.5 * loss;
}

// The furthest column a grid chosen in the block [i1, i2) reads: the end of the last group beginning
// in it (dynamic groups; at column 0 nothing is corrected yet, so its group needs no corrections).
std::int64_t blockReach(const GptqProblem& p, std::int64_t i1, std::int64_t i2) {
    const std::int64_t cols = p.w.cols(), lastStart = (i2 - 1) / p.groupCols * p.groupCols;
    if (p.options.staticGroups || lastStart < i1 || lastStart == 0) return i2;
    return std::max(i2, std::min(cols, lastStart + p.groupCols));
}

// D in visiting order: d(i, k) = dxxt(perm[i], perm[k]). (A dead input's X̃ column is zero, so D's
// column for it is already zero, as GPTQModel sets it.)
MatrixF permutedCorrection(const MatrixF& dxxt, const std::vector<int>& perm) {
    const std::int64_t n = dxxt.rows();
    MatrixF d(n, n);
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t k = 0; k < n; ++k)
            d(i, k) = dxxt(perm[static_cast<std::size_t>(i)], perm[static_cast<std::size_t>(k)]);
    return d;
}

// GPTAQ's P = alpha · triu₁(D Uᵀ) · U with U = M⁻¹, in D's memory and without the inverse: A = D M⁻ᵀ
// solves A Mᵀ = D, then P M = alpha triu₁(A). Each row is solved on its own, by tiles of rows over the
// threads (a tile's size does not follow the team's, so neither do the bits).
void correctionInPlace(MatrixF& d, const MatrixF& m, double alpha) {
    const std::int64_t n = d.rows(), chunks = (n + kTile - 1) / kTile;
    const auto upper = m.triangularView<Eigen::Upper>();
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t c = 0; c < chunks; ++c) {
        const std::int64_t r0 = c * kTile, nr = std::min(kTile, n - r0);
        MatrixF rows = d.middleRows(r0, nr);
        upper.transpose().solveInPlace<Eigen::OnTheRight>(rows);
        for (std::int64_t r = 0; r < nr; ++r)
            std::fill(rows.row(r).data(), rows.row(r).data() + std::min(n, r0 + r + 1), 0.0f);
        rows *= static_cast<float>(alpha);
        upper.solveInPlace<Eigen::OnTheRight>(rows);
        d.middleRows(r0, nr) = rows;
    }
}

}  // namespace

bool upperFactor(const MatrixF& h, MatrixF& m) {
    MatrixF a = reversed(h);
    if (!upperFactorInPlace(a)) return false;
    m = std::move(a);
    return true;
}

void CpuGptqSolver::takeHessian(const GptqProblem& problem, MatrixF&& h) {
    h_ = std::move(h);
    diagonal_ = Eigen::VectorXf();
    if (dxxt_ != nullptr) {
        p_ = permutedCorrection(*dxxt_, problem.perm);
        dxxt_ = nullptr;
    }
}

void CpuGptqSolver::correctTowardsFullPrecision(const MatrixF& dxxt, double alpha) {
    dxxt_ = &dxxt;
    alpha_ = alpha;
}

// J (H + λI) J in H's buffer: the diagonal maps onto itself. A failed attempt left the strict upper
// triangle as it was, so a retry mirrors it back and damps the saved diagonal again.
bool CpuGptqSolver::factor(double lambda) {
    if (diagonal_.size() == 0) {
        reverseInPlace(h_);
        diagonal_ = h_.diagonal();
    } else {
        mirrorUpperToLower(h_);
    }
    h_.diagonal() = diagonal_.array() + static_cast<float>(lambda);
    if (!upperFactorInPlace(h_)) return false;
    m_ = std::move(h_);
    h_ = MatrixF();
    diagonal_ = Eigen::VectorXf();
    return true;
}

double CpuGptqSolver::columnLoop(GptqProblem& p, std::vector<std::uint8_t>& codes) {
    const GptqOptions& o = p.options;
    const std::int64_t rows = p.w.rows(), cols = p.w.cols();
    ColMatrixF acc, ub, corr;
    const bool gptaq = p_.size() != 0;
    MatrixF v;
    if (gptaq) {
        correctionInPlace(p_, m_, alpha_);
        v = MatrixF::Zero(rows, cols);
    }
    const LoopState s{o,
                      p,
                      m_,
                      acc,
                      ub,
                      p.w,
                      static_cast<float>((1 << o.bits) - 1),
                      codes,
                      p.scales,
                      p.zeros,
                      gptaq ? &p_ : nullptr,
                      gptaq ? &corr : nullptr,
                      gptaq ? &v : nullptr};
    const std::int64_t chunks = (rows + kRowChunk - 1) / kRowChunk;
    std::vector<double> chunkLoss(static_cast<std::size_t>(chunks), 0.0);
    for (std::int64_t i1 = 0; i1 < cols; i1 += o.blockSize) {
        const std::int64_t i2 = std::min<std::int64_t>(i1 + o.blockSize, cols), bw = i2 - i1;
        const std::int64_t reach = blockReach(p, i1, i2);
        if (i1 == 0)
            acc.setZero(rows, reach);
        else  // the blocks done, all at once: one GEMM
            acc.noalias() = p.w.leftCols(i1) * m_.block(0, i1, i1, reach - i1);
        if (gptaq && i1 == 0)
            corr.setZero(rows, reach);
        else if (gptaq)  // GPTAQ's correction from the blocks done, the same way
            corr.noalias() = v.leftCols(i1) * p_.block(0, i1, i1, reach - i1);
        if (!o.staticGroups)
            ub =
                ColMatrixF(m_.block(i1, i1, bw, bw)).triangularView<Eigen::Upper>().solve(ColMatrixF::Identity(bw, bw));
#pragma omp parallel for schedule(static)
        for (std::int64_t c = 0; c < chunks; ++c) {
            const std::int64_t r0 = c * kRowChunk;
            chunkLoss[static_cast<std::size_t>(c)] += blockChunk(s, i1, i2, r0, std::min(kRowChunk, rows - r0));
        }
        if (o.cancel) o.cancel->throwIfCancelled();
    }
    p_ = MatrixF();
    return std::accumulate(chunkLoss.begin(), chunkLoss.end(), 0.0);
}

}  // namespace qs::quant
