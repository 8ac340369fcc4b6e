#pragma once
// Random Hadamard rotations (QuIP#, QTIP incoherence processing; QuaRot / SpinQuant on a model's residual
// stream): M = H D / sqrt(b) on each block of b coordinates, with H a Hadamard matrix of order b and D
// random +-1 signs drawn from a seed. M is orthogonal, so rotating a weight group spreads its outliers over
// all b coordinates and the rotation is undone exactly.
//
// Orders: b = 2^k (Sylvester), 12·2^k and 20·2^k (Paley I, q = 11, 19), 28·2^k (Paley II, q = 13): a
// non-power-of-two H is the Kronecker product of the small Paley matrix and a Sylvester one, applied as the
// fast Walsh-Hadamard transform on each of its rows and a small mix across them. A size with no such order
// (hidden 960 = 3 · 320) is rotated block-diagonally by the largest order that divides it.
#include <cstdint>
#include <vector>

#include "qs/matrix.h"

namespace qs::quant {

using HadamardMatrix = Eigen::Matrix<int, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// In-place unnormalised Walsh-Hadamard transform in Sylvester (natural) order: x <- H x (= x H, as
// H is symmetric). n must be a power of two.
void fwht(float* x, std::size_t n);

// Whether a Hadamard matrix of order n is built here (2^k, 12·2^k, 20·2^k, 28·2^k).
bool isHadamardOrder(std::size_t n);
// The largest Hadamard order that divides n (n >= 1): the block of a rotation of size n.
std::size_t hadamardBlock(std::size_t n);
// The integer Hadamard matrix of order n (H Hᵀ = n I) that RandomHadamard uses; throws qs::Error unless
// isHadamardOrder(n).
HadamardMatrix hadamardMatrix(std::size_t n);

class RandomHadamard {
public:
    // Any n >= 1 (throws qs::Error for 0); a power of two is one Sylvester block, as before.
    RandomHadamard(std::size_t n, std::uint64_t seed);

    std::size_t size() const { return signs_.size(); }
    std::size_t block() const { return paleyOrder_ * sylvesterOrder_; }
    std::uint64_t seed() const { return seed_; }
    const std::vector<float>& signs() const { return signs_; }

    // Row vector x <- x M^T (signs, transform, 1/sqrt(b)): what the encoder codes.
    void rotate(float* x) const;
    // Row vector x <- x M (transform, 1/sqrt(b), signs): the inverse of rotate().
    void unrotate(float* x) const;
    // Every row of m rotated (m <- m M^T) or unrotated (m <- m M); m.cols() == size().
    void rotateRows(MatrixF& m) const;
    void unrotateRows(MatrixF& m) const;
    // M itself, n x n (for tests and for rotating activations with a GEMM).
    MatrixF matrix() const;

private:
    // One block: x <- x H, or x <- x Hᵀ when `transposed`, unnormalised.
    void transformBlock(float* x, bool transposed) const;

    std::vector<float> signs_;
    std::uint64_t seed_;
    float norm_;
    std::size_t paleyOrder_ = 1;      // 1, 12, 20 or 28
    std::size_t sylvesterOrder_ = 1;  // the power of two beside it
    MatrixF paley_;                   // the Paley factor, paleyOrder_ square (empty for 1)
};

}  // namespace qs::quant
