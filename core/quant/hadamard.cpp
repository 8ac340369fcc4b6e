#include "qs/quant/hadamard.h"

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
    if (n == 0 || (n & (n - 1)) != 0)
        throw Error("RandomHadamard: the size must be a power of two, got " + std::to_string(n));
    // mt19937_64 is specified bit for bit by the standard, so the signs are the same everywhere.
    std::mt19937_64 rng(seed);
    signs_.resize(n);
    for (float& s : signs_) s = (rng() >> 63) ? -1.0f : 1.0f;
    norm_ = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
}

void RandomHadamard::rotate(float* x) const {
    const std::size_t n = signs_.size();
    for (std::size_t i = 0; i < n; ++i) x[i] *= signs_[i];
    fwht(x, n);
    for (std::size_t i = 0; i < n; ++i) x[i] *= norm_;
}

void RandomHadamard::unrotate(float* x) const {
    const std::size_t n = signs_.size();
    fwht(x, n);
    for (std::size_t i = 0; i < n; ++i) x[i] *= norm_ * signs_[i];
}

MatrixF RandomHadamard::matrix() const {
    // Row i of M is e_i M = e_i H D / sqrt(n): unrotating a unit vector.
    const auto n = static_cast<std::int64_t>(signs_.size());
    MatrixF m = MatrixF::Identity(n, n);
    for (std::int64_t i = 0; i < n; ++i) unrotate(m.data() + i * n);
    return m;
}

}  // namespace qs::quant
