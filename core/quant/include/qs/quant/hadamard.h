#pragma once
// Random Hadamard rotations (QuIP#, QTIP incoherence processing): M = H D / sqrt(n), with H the
// Sylvester Hadamard matrix of order n (a power of two) and D random +-1 signs drawn from a seed.
// M is orthogonal, so rotating a weight group spreads its outliers over all n coordinates and the
// rotation is undone exactly. Applied with the fast Walsh-Hadamard transform: n log2 n additions.
#include <cstdint>
#include <vector>

#include "qs/matrix.h"

namespace qs::quant {

// In-place unnormalised Walsh-Hadamard transform in Sylvester (natural) order: x <- H x (= x H, as
// H is symmetric). n must be a power of two.
void fwht(float* x, std::size_t n);

class RandomHadamard {
public:
    // Throws qs::Error unless n is a power of two (n >= 1).
    RandomHadamard(std::size_t n, std::uint64_t seed);

    std::size_t size() const { return signs_.size(); }
    std::uint64_t seed() const { return seed_; }
    const std::vector<float>& signs() const { return signs_; }

    // Row vector x <- x M^T (signs, transform, 1/sqrt(n)): what the encoder codes.
    void rotate(float* x) const;
    // Row vector x <- x M (transform, 1/sqrt(n), signs): the inverse of rotate().
    void unrotate(float* x) const;
    // M itself, n x n (for tests and for rotating activations with a GEMM).
    MatrixF matrix() const;

private:
    std::vector<float> signs_;
    std::uint64_t seed_;
    float norm_;
};

}  // namespace qs::quant
