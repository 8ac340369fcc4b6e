#include "cpu_gptq_solver.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>
#include <vector>

#include "qs/eigen.h"
#include "qs/quant/gptq.h"
#include "qs/quant/rtn.h"

namespace qs::quant {

namespace {

using ColMatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
constexpr std::int64_t kFactorBlock = 128;    // panel width of the Cholesky and the triangular inverse
constexpr std::int64_t kTile = 256;           // tile of the trailing lower-triangular updates
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

// A22 -= A21 A21ᵀ on the lower triangle only, tile by tile over the threads (half the flops of a GEMM).
// A diagonal tile's upper part is left as it was: a damping retry rebuilds the matrix from it.
void lowerRankUpdate(MatrixF& a, std::int64_t k, std::int64_t b) {
    const std::int64_t r0 = k + b, rem = a.rows() - r0;
    const std::int64_t tiles = (rem + kTile - 1) / kTile;
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
    for (std::int64_t i = 0; i < tiles; ++i)
        for (std::int64_t j = 0; j <= i; ++j) pairs.emplace_back(i, j);
#pragma omp parallel for schedule(dynamic, 1)
    for (std::size_t p = 0; p < pairs.size(); ++p) {
        const std::int64_t ri = r0 + pairs[p].first * kTile, rj = r0 + pairs[p].second * kTile;
        const std::int64_t ni = std::min(kTile, a.rows() - ri), nj = std::min(kTile, a.rows() - rj);
        if (ri != rj) {
            a.block(ri, rj, ni, nj).noalias() -= a.block(ri, k, ni, b) * a.block(rj, k, nj, b).transpose();
            continue;
        }
        // A diagonal tile: the same GEMM (the same bits below the diagonal), its strict upper part put back.
        const ColMatrixF upper = a.block(ri, rj, ni, nj).triangularView<Eigen::StrictlyUpper>();
        a.block(ri, rj, ni, nj).noalias() -= a.block(ri, k, ni, b) * a.block(rj, k, nj, b).transpose();
        a.block(ri, rj, ni, nj).triangularView<Eigen::StrictlyUpper>() = upper;
    }
}

// Right-looking blocked Cholesky A = L Lᵀ in place (lower triangle; the strict upper one is not
// written); false if A is not positive definite.
bool choleskyLower(MatrixF& a) {
    const std::int64_t n = a.rows();
    for (std::int64_t k = 0; k < n; k += kFactorBlock) {
        const std::int64_t b = std::min(kFactorBlock, n - k);
        Eigen::LLT<ColMatrixF> llt(a.block(k, k, b, b));
        if (llt.info() != Eigen::Success) return false;
        a.block(k, k, b, b).triangularView<Eigen::Lower>() = llt.matrixL();
        const std::int64_t rem = n - k - b;
        if (rem == 0) break;
        const std::int64_t chunks = (rem + kTile - 1) / kTile;
#pragma omp parallel for schedule(dynamic, 1)
        for (std::int64_t c = 0; c < chunks; ++c) {
            const std::int64_t r = k + b + c * kTile, nr = std::min(kTile, n - r);
            auto panel = a.block(r, k, nr, b);
            llt.matrixU().solveInPlace<Eigen::OnTheRight>(panel);  // A21 L11⁻ᵀ
        }
        lowerRankUpdate(a, k, b);
    }
    return true;
}

// X = L⁻¹ for lower-triangular L, by block columns (independent, so spread over the threads).
// Nothing above the diagonal is written.
MatrixF lowerInverse(const MatrixF& l) {
    const std::int64_t n = l.rows();
    const std::int64_t blocks = (n + kFactorBlock - 1) / kFactorBlock;
    std::vector<ColMatrixF> diagInv(static_cast<std::size_t>(blocks));
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t j = 0; j < blocks; ++j) {
        const std::int64_t c = j * kFactorBlock, b = std::min(kFactorBlock, n - c);
        diagInv[static_cast<std::size_t>(j)] =
            l.block(c, c, b, b).triangularView<Eigen::Lower>().solve(ColMatrixF::Identity(b, b));
    }
    MatrixF x(n, n);
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t j = 0; j < blocks; ++j) {
        const std::int64_t c0 = j * kFactorBlock, bj = std::min(kFactorBlock, n - c0);
        x.block(c0, c0, bj, bj) = diagInv[static_cast<std::size_t>(j)];
        for (std::int64_t i = j + 1; i < blocks; ++i) {
            const std::int64_t r0 = i * kFactorBlock, bi = std::min(kFactorBlock, n - r0);
            const ColMatrixF s = l.block(r0, c0, bi, r0 - c0) * x.block(c0, c0, r0 - c0, bj);
            x.block(r0, c0, bi, bj).noalias() = -(diagInv[static_cast<std::size_t>(i)] * s);
        }
    }
    return x;
}

bool positiveDiagonal(const MatrixF& l) {
    for (std::int64_t i = 0; i < l.rows(); ++i)
        if (!(l(i, i) > 0.0f) || !std::isfinite(l(i, i))) return false;
    return true;
}

// `a` = B = J (H + λI) J on entry; on success the upper Cholesky factor U of (H + λI)⁻¹ = UᵀU.
//
// B = L Lᵀ, and H⁻¹ = J B⁻¹ J = (J L⁻ᵀ J)(J L⁻¹ J), so U = J L⁻¹ J, upper triangular:
// U(i, j) = X(n-1-i, n-1-j) for X = L⁻¹, at flat index n² - 1 minus that of (i, j) in the same
// row-major storage. U is X's buffer read backwards, once X's unwritten upper triangle (U's lower)
// is zeroed.
bool upperCholeskyOfInverseInPlace(MatrixF& a) {
    if (!choleskyLower(a) || !positiveDiagonal(a)) return false;
    MatrixF x = lowerInverse(a);
    a = MatrixF();
    const std::int64_t n = x.rows();
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) std::fill(x.row(i).data() + i + 1, x.row(i).data() + n, 0.0f);
    reverseInPlace(x);
    a = std::move(x);
    return true;
}

struct LoopState {
    const GptqOptions& o;
    GptqProblem& p;  // p.w: the corrected weights, visiting order
    const MatrixF& u;
    float maxq;
    std::vector<std::uint8_t>& codes;  // [cols][rows], visiting order
};

// One row chunk of one block: the block-internal column loop, with rank-one updates inside the block.
double blockChunk(LoopState& s, std::int64_t i1, std::int64_t i2, std::int64_t r0, std::int64_t nr, ColMatrixF& err) {
    const std::int64_t bw = i2 - i1, rows = s.p.w.rows(), cols = s.p.w.cols();
    ColMatrixF wb = s.p.w.block(r0, i1, nr, bw);
    Eigen::VectorXf scale(nr), zero(nr);
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
            // a group that began in an earlier block: its grid is already known
            currentGroup = g;
            for (std::int64_t r = 0; r < nr; ++r) {
                scale[r] = s.p.scales(r0 + r, g);
                zero[r] = s.p.zeros(r0 + r, g);
            }
        } else if (g != currentGroup) {
            // The group's range from the weights as corrected so far. When a group straddles the block's
            // end (group size not a multiple of the block size) the columns after the block still lack
            // this block's updates; the reference gptq_quantize reads them stale, here they are brought up to date.
            currentGroup = g;
            const std::int64_t groupEnd =
                std::min<std::int64_t>(static_cast<std::int64_t>(g + 1) * s.p.groupCols, cols);
            const std::int64_t inBlock = std::min(groupEnd, i2) - col;
            float low[kRowChunk], high[kRowChunk];  // the range within the block: columns outer, rows vectorised
            std::copy_n(wb.col(i).data(), nr, low);
            std::copy_n(wb.col(i).data(), nr, high);
            for (std::int64_t c = i + 1; c < i + inBlock; ++c) {
                const float* v = wb.col(c).data();
#pragma omp simd
                for (std::int64_t r = 0; r < nr; ++r) {
                    low[r] = std::min(low[r], v[r]);
                    high[r] = std::max(high[r], v[r]);
                }
            }
            for (std::int64_t r = 0; r < nr; ++r) {
                float lo = low[r], hi = high[r];
                for (std::int64_t c = i2; c < groupEnd; ++c) {
                    // with this block's pending (lazy) updates applied, as the one-column-at-a-time algorithm has them
                    float v = s.p.w(r0 + r, c);
                    for (std::int64_t k = 0; k < i; ++k) v -= err(r0 + r, k) * s.u(i1 + k, c);
                    lo = std::min(lo, v);
                    hi = std::max(hi, v);
                }
                const GridParams gp = gridParams(lo, hi, s.o.bits, s.o.sym, s.o.rule);
                scale[r] = gp.scale;
                zero[r] = gp.zero;
                s.p.scales(r0 + r, g) = gp.scale;
                s.p.zeros(r0 + r, g) = gp.zero;
            }
        }
        const float d = s.u(col, col);
        std::uint8_t* codeOut = s.codes.data() + col * rows + r0;
        float* e = err.col(i).data() + r0;
        const float* wcol = wb.col(i).data();
#pragma omp simd
        for (std::int64_t r = 0; r < nr; ++r) {
            const float q = quantizeCode(wcol[r], {scale[r], zero[r]}, s.maxq);
            codeOut[r] = static_cast<std::uint8_t>(q);
            e[r] = (wcol[r] - dequantizeCode(q, {scale[r], zero[r]})) / d;
        }
        for (std::int64_t r = 0; r < nr; ++r) loss += static_cast<double>(e[r]) * static_cast<double>(e[r]);
        if (i + 1 < bw)
            wb.rightCols(bw - i - 1).noalias() -=
                err.col(i).segment(r0, nr) * s.u.row(col).segment(col + 1, bw - i - 1);
    }
    return 0.5 * loss;
}

}  // namespace

bool upperCholeskyOfInverse(const MatrixF& h, MatrixF& u) {
    MatrixF a = reversed(h);
    if (!upperCholeskyOfInverseInPlace(a)) return false;
    u = std::move(a);
    return true;
}

void CpuGptqSolver::takeHessian(const GptqProblem&, MatrixF&& h) {
    h_ = std::move(h);
    diagonal_ = Eigen::VectorXf();
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
    if (!upperCholeskyOfInverseInPlace(h_)) return false;
    u_ = std::move(h_);
    h_ = MatrixF();
    diagonal_ = Eigen::VectorXf();
    return true;
}

double CpuGptqSolver::columnLoop(GptqProblem& p, std::vector<std::uint8_t>& codes) {
    const GptqOptions& o = p.options;
    const std::int64_t rows = p.w.rows(), cols = p.w.cols();
    LoopState s{o, p, u_, static_cast<float>((1 << o.bits) - 1), codes};
    const std::int64_t chunks = (rows + kRowChunk - 1) / kRowChunk;
    std::vector<double> chunkLoss(static_cast<std::size_t>(chunks), 0.0);
    ColMatrixF err(rows, o.blockSize);
    for (std::int64_t i1 = 0; i1 < cols; i1 += o.blockSize) {
        const std::int64_t i2 = std::min<std::int64_t>(i1 + o.blockSize, cols);
#pragma omp parallel for schedule(static)
        for (std::int64_t c = 0; c < chunks; ++c) {
            const std::int64_t r0 = c * kRowChunk;
            chunkLoss[static_cast<std::size_t>(c)] += blockChunk(s, i1, i2, r0, std::min(kRowChunk, rows - r0), err);
        }
        if (i2 < cols)  // lazy batch update: everything after the block, one GEMM
            p.w.rightCols(cols - i2).noalias() -= err.leftCols(i2 - i1) * u_.block(i1, i2, i2 - i1, cols - i2);
        if (o.cancel) o.cancel->throwIfCancelled();
    }
    return std::accumulate(chunkLoss.begin(), chunkLoss.end(), 0.0);
}

}  // namespace qs::quant
