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
constexpr std::int64_t kFactorBlock = 128;  // panel width of the Cholesky and the triangular inverse
constexpr std::int64_t kTile = 256;         // tile of the trailing lower-triangular updates
constexpr std::int64_t kRowChunk = 32;      // rows per task of the column loop (its block fits in L1/L2)
constexpr std::int64_t kCopyTile = 32;      // tile of the transposing copies (both sides of a tile stay in L1)

// a = J h J on and below the diagonal, zero above it: a(i, j) = h(n-1-i, n-1-j), column-major from
// row-major. The factorization reads only this triangle. A transposing copy, so tile by tile (h's
// rows read backwards, a's columns written within the tile) and over the threads: Eigen's reverse()
// assignment walks one side with stride n and, single-threaded, cost a third of the factorization.
ColMatrixF reversedLower(const MatrixF& h) {
    const std::int64_t n = h.rows(), tiles = (n + kCopyTile - 1) / kCopyTile;
    ColMatrixF a(n, n);
#pragma omp parallel for schedule(static)
    for (std::int64_t tj = 0; tj < tiles; ++tj) {  // a block column of a: n values per column, balanced
        const std::int64_t j0 = tj * kCopyTile, j1 = std::min(n, j0 + kCopyTile);
        for (std::int64_t j = j0; j < j1; ++j) std::fill(a.col(j).data(), a.col(j).data() + j, 0.0f);
        for (std::int64_t i0 = j0; i0 < n; i0 += kCopyTile) {
            const std::int64_t i1 = std::min(n, i0 + kCopyTile);
            for (std::int64_t i = i0; i < i1; ++i) {
                const float* hr = h.data() + (n - 1 - i) * n + (n - 1);  // h(n-1-i, n-1-j) = hr[-j]
                for (std::int64_t j = j0; j < std::min(j1, i + 1); ++j) a(i, j) = hr[-j];
            }
        }
    }
    return a;
}

// u = J x J on and above the diagonal, zero below it: u(i, j) = x(n-1-i, n-1-j), row-major from
// column-major lower-triangular x; tiled over the threads like reversedLower.
MatrixF reversedUpper(const ColMatrixF& x) {
    const std::int64_t n = x.rows(), tiles = (n + kCopyTile - 1) / kCopyTile;
    MatrixF u(n, n);
#pragma omp parallel for schedule(static)
    for (std::int64_t ti = 0; ti < tiles; ++ti) {  // a block row of u
        const std::int64_t i0 = ti * kCopyTile, i1 = std::min(n, i0 + kCopyTile);
        for (std::int64_t i = i0; i < i1; ++i) std::fill(u.row(i).data(), u.row(i).data() + i, 0.0f);
        for (std::int64_t j0 = i0; j0 < n; j0 += kCopyTile) {
            const std::int64_t j1 = std::min(n, j0 + kCopyTile);
            for (std::int64_t j = j0; j < j1; ++j) {
                const float* xc = x.data() + (n - 1 - j) * n + (n - 1);  // x(n-1-i, n-1-j) = xc[-i]
                for (std::int64_t i = i0; i < std::min(i1, j + 1); ++i) u(i, j) = xc[-i];
            }
        }
    }
    return u;
}

// A22 -= A21 A21ᵀ on the lower triangle only, tile by tile over the threads (half the flops of a GEMM).
void lowerRankUpdate(ColMatrixF& a, std::int64_t k, std::int64_t b) {
    const std::int64_t r0 = k + b, rem = a.rows() - r0;
    const std::int64_t tiles = (rem + kTile - 1) / kTile;
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
    for (std::int64_t i = 0; i < tiles; ++i)
        for (std::int64_t j = 0; j <= i; ++j) pairs.emplace_back(i, j);
#pragma omp parallel for schedule(dynamic, 1)
    for (std::size_t p = 0; p < pairs.size(); ++p) {
        const std::int64_t ri = r0 + pairs[p].first * kTile, rj = r0 + pairs[p].second * kTile;
        const std::int64_t ni = std::min(kTile, a.rows() - ri), nj = std::min(kTile, a.rows() - rj);
        a.block(ri, rj, ni, nj).noalias() -= a.block(ri, k, ni, b) * a.block(rj, k, nj, b).transpose();
    }
}

// Right-looking blocked Cholesky A = L Lᵀ in place (lower triangle); false if A is not positive definite.
bool choleskyLower(ColMatrixF& a) {
    const std::int64_t n = a.rows();
    for (std::int64_t k = 0; k < n; k += kFactorBlock) {
        const std::int64_t b = std::min(kFactorBlock, n - k);
        Eigen::LLT<ColMatrixF> llt(a.block(k, k, b, b));
        if (llt.info() != Eigen::Success) return false;
        a.block(k, k, b, b) = llt.matrixL();
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
ColMatrixF lowerInverse(const ColMatrixF& l) {
    const std::int64_t n = l.rows();
    const std::int64_t blocks = (n + kFactorBlock - 1) / kFactorBlock;
    std::vector<ColMatrixF> diagInv(static_cast<std::size_t>(blocks));
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t j = 0; j < blocks; ++j) {
        const std::int64_t c = j * kFactorBlock, b = std::min(kFactorBlock, n - c);
        diagInv[static_cast<std::size_t>(j)] =
            l.block(c, c, b, b).triangularView<Eigen::Lower>().solve(ColMatrixF::Identity(b, b));
    }
    ColMatrixF x(n, n);  // every block on and below the diagonal is written before it is read; above, unused
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

bool positiveDiagonal(const ColMatrixF& l) {
    for (std::int64_t i = 0; i < l.rows(); ++i)
        if (!(l(i, i) > 0.0f) || !std::isfinite(l(i, i))) return false;
    return true;
}

// a = J H J on entry (J reverses the order); its lower Cholesky factor L in place. False when H is not
// positive definite.
bool factorReversed(ColMatrixF& a) { return choleskyLower(a) && positiveDiagonal(a); }

// J L⁻¹ J (upper triangular) from the factor of factorReversed; frees `l` before forming the result.
MatrixF inverseFactor(ColMatrixF& l) {
    ColMatrixF x = lowerInverse(l);
    l = ColMatrixF();
    return reversedUpper(x);
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
            for (std::int64_t r = 0; r < nr; ++r) {
                float lo = wb(r, i), hi = lo;
                for (std::int64_t c = i; c < i + inBlock; ++c) {
                    lo = std::min(lo, wb(r, c));
                    hi = std::max(hi, wb(r, c));
                }
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
    ColMatrixF a = reversedLower(h);  // J H J
    if (!factorReversed(a)) return false;
    u = inverseFactor(a);  // J L⁻¹ J: upper triangular, H⁻¹ = UᵀU
    return true;
}

void CpuGptqSolver::takeHessian(const GptqProblem&, MatrixF&& h) { h_ = std::move(h); }

// H is kept only to retry with more damping: it is freed as soon as one factorization succeeds.
bool CpuGptqSolver::factor(double lambda) {
    ColMatrixF a = reversedLower(h_);  // J (H + λI) J: the diagonal maps onto itself
    a.diagonal().array() += static_cast<float>(lambda);
    if (!factorReversed(a)) return false;
    h_ = MatrixF();
    u_ = inverseFactor(a);
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
