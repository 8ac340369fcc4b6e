#include "qs/quant/hadamard.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "qs/error.h"

namespace qs::quant {

void fwht(float* x, std::size_t n) {
    for (std::size_t h = 1; h < n; h *= 2) {
        for (std::size_t i = 0; i < n; i += 2 * h) {
            float* a = x + i;
            float* b = x + i + h;
#pragma omp simd
            for (std::size_t j = 0; j < h; ++j) {
                const float u = a[j], v = b[j];
                a[j] = u + v;
                b[j] = u - v;
            }
        }
    }
}

RandomHadamard::RandomHadamard(std::size_t n, std::uint64_t seed) : seed_(seed) {
    if (n == 0) throw Error("RandomHadamard: the size must be at least 1");
    // mt19937_64 is specified bit for bit by the standard, so the signs are the same everywhere.
    std::mt19937_64 rng(seed);
    signs_.resize(n);
    for (float& s : signs_) s = (rng() >> 63) ? -1.0f : 1.0f;
    const std::size_t b = hadamardBlock(n);
    const HadamardMatrix h = hadamardMatrix(b);
    // H = A ⊗ S (hadamardMatrix): A is H's top-left corner at S's stride, S a power of two.
    for (std::size_t order : {std::size_t{28}, std::size_t{20}, std::size_t{12}})
        if (b % order == 0 && (b / order & (b / order - 1)) == 0) {
            paleyOrder_ = order;
            break;
        }
    sylvesterOrder_ = b / paleyOrder_;
    if (paleyOrder_ > 1) {
        const auto stride = static_cast<Eigen::Index>(sylvesterOrder_), m = static_cast<Eigen::Index>(paleyOrder_);
        paley_.resize(m, m);
        for (Eigen::Index i = 0; i < m; ++i)
            for (Eigen::Index j = 0; j < m; ++j) paley_(i, j) = static_cast<float>(h(i * stride, j * stride));
    }
    norm_ = static_cast<float>(1.0 / std::sqrt(static_cast<double>(b)));
}

// x H = x (A ⊗ S): S (symmetric) on each of A's paleyOrder_ rows of coordinates, then row i' of the result is
// the sum of rows i weighted by A(i, i') (by A(i', i) for Hᵀ = Aᵀ ⊗ S).
void RandomHadamard::transformBlock(float* x, bool transposed) const {
    const std::size_t p = sylvesterOrder_, m = paleyOrder_;
    for (std::size_t i = 0; i < m; ++i) fwht(x + i * p, p);
    if (m == 1) return;
    std::vector<float> mixed(m * p, 0.0f);
    for (std::size_t to = 0; to < m; ++to)
        for (std::size_t from = 0; from < m; ++from) {
            const float a = transposed ? paley_(Eigen::Index(to), Eigen::Index(from))
                                       : paley_(Eigen::Index(from), Eigen::Index(to));
            const float* src = x + from * p;
            float* dst = mixed.data() + to * p;
            for (std::size_t j = 0; j < p; ++j) dst[j] += a * src[j];
        }
    std::copy(mixed.begin(), mixed.end(), x);
}

void RandomHadamard::rotate(float* x) const {
    const std::size_t n = signs_.size(), b = block();
    for (std::size_t i = 0; i < n; ++i) x[i] *= signs_[i];
    for (std::size_t at = 0; at < n; at += b) transformBlock(x + at, true);
    for (std::size_t i = 0; i < n; ++i) x[i] *= norm_;
}

void RandomHadamard::unrotate(float* x) const {
    const std::size_t n = signs_.size(), b = block();
    for (std::size_t at = 0; at < n; at += b) transformBlock(x + at, false);
    for (std::size_t i = 0; i < n; ++i) x[i] *= norm_ * signs_[i];
}

void RandomHadamard::rotateRows(MatrixF& m) const {
    if (static_cast<std::size_t>(m.cols()) != size())
        throw Error("RandomHadamard: rows of " + std::to_string(m.cols()) + " columns, rotation of size " +
                    std::to_string(size()));
#pragma omp parallel for schedule(static)
    for (Eigen::Index r = 0; r < m.rows(); ++r) rotate(m.data() + r * m.cols());
}

void RandomHadamard::unrotateRows(MatrixF& m) const {
    if (static_cast<std::size_t>(m.cols()) != size())
        throw Error("RandomHadamard: rows of " + std::to_string(m.cols()) + " columns, rotation of size " +
                    std::to_string(size()));
#pragma omp parallel for schedule(static)
    for (Eigen::Index r = 0; r < m.rows(); ++r) unrotate(m.data() + r * m.cols());
}

MatrixF RandomHadamard::matrix() const {
    // Row i of M is e_i M = e_i H D / sqrt(n): unrotating a unit vector.
    const auto n = static_cast<std::int64_t>(signs_.size());
    MatrixF m = MatrixF::Identity(n, n);
    for (std::int64_t i = 0; i < n; ++i) unrotate(m.data() + i * n);
    return m;
}

}  // namespace qs::quant
